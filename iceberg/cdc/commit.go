package cdc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write"
)

// Snapshot summary keys of CDC commits besides write's token keys.
const (
	// SummaryMaxCommittedSeqPrefix prefixes the key holding, for one sink id, the
	// highest change sequence number the snapshot's window applied.
	SummaryMaxCommittedSeqPrefix = "beam.cdc.max-committed-seq."
	// SummaryAddedDVs counts the deletion vectors a snapshot added (Java's key).
	SummaryAddedDVs = "added-dvs"
	// SummaryRemovedDVs counts the deletion vectors a snapshot removed (Java's key).
	SummaryRemovedDVs = "removed-dvs"
	// SummaryReresolved counts the commit attempts whose keys had to be resolved again
	// because the table changed under them.
	SummaryReresolved = "beam.cdc.reresolved-attempts"
)

// MaxCommittedSeqKey returns "beam.cdc.max-committed-seq.<sinkID>".
func MaxCommittedSeqKey(sinkID string) string { return SummaryMaxCommittedSeqPrefix + sinkID }

// SummaryPriorMaxSeqPrefix prefixes the key holding, for one sink id, the highest
// sequence number the sink's earlier runs had committed when the snapshot's run
// started (see write.PriorThroughKey).
const SummaryPriorMaxSeqPrefix = "beam.cdc.prior-max-seq."

// PriorMaxSeqKey returns "beam.cdc.prior-max-seq.<sinkID>".
func PriorMaxSeqKey(sinkID string) string { return SummaryPriorMaxSeqPrefix + sinkID }

// noSeq stands for "no sequence number committed".
const noSeq = int64(-1 << 63)

// committedSeqs returns the highest sequence number sinkID has committed (max) and
// the highest its runs other than runID had committed (prior), from its newest token
// (noSeq when none).
func committedSeqs(tok write.Token, found bool, sinkID, runID string) (maxSeq, prior int64) {
	maxSeq, prior = noSeq, noSeq
	if !found || tok.Summary == nil {
		return maxSeq, prior
	}
	p := tok.Summary.Properties
	if v, err := strconv.ParseInt(p[MaxCommittedSeqKey(sinkID)], 10, 64); err == nil {
		maxSeq = v
	}
	if runID == "" || p[write.RunKey(sinkID)] != runID {
		return maxSeq, maxSeq
	}
	if v, err := strconv.ParseInt(p[PriorMaxSeqKey(sinkID)], 10, 64); err == nil {
		prior = v
	}
	return maxSeq, prior
}

// Window is one table's changes of one window, ready to commit.
type Window struct {
	// SinkID, RunID and WindowEndMs make the commit exactly-once (see
	// write.CommitRequest).
	SinkID, RunID string
	WindowEndMs   int64
	// LateID, when set, makes this a late pane of the window; ContentID identifies the
	// content (see write.WindowRef).
	LateID, ContentID string
	// MaxSeq is the highest change sequence number of the window.
	MaxSeq int64
	// DataFiles are the new rows' data files (write.WriteDataFiles). Duplicate paths
	// are committed once.
	DataFiles []ibg.DataFile
	// DeleteKeys are keys whose committed row must go (Result.DeleteKeys of every
	// shard). In DV mode they are resolved at commit; in equality mode they become
	// equality delete rows.
	DeleteKeys [][]any
	// Resolved are resolutions made by the shards (DV mode). The committer brings each
	// up to the snapshot it commits on.
	Resolved []*Resolution
	// SnapshotProps are extra summary properties; keys under beam.cdc. are rejected.
	SnapshotProps map[string]string
}

// Committer commits CDC windows as one RowDelta each.
type Committer struct {
	// KeyColumns are the equality columns. Required.
	KeyColumns []string
	// DeleteFormat is config.DeleteFormatDV or config.DeleteFormatEquality; empty
	// picks DV on format-version 3 tables and equality deletes before.
	DeleteFormat config.DeleteFormat
	// ChunkKeys is passed to the Resolver.
	ChunkKeys int
	// MaxAttempts bounds the attempts (default write.DefaultMaxAttempts).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the wait between attempts (defaults
	// write.DefaultMinBackoff and write.DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
}

// CommitResult describes a CDC commit.
type CommitResult struct {
	write.CommitResult
	// DVsAdded and DVsRemoved count the deletion vectors added and replaced.
	DVsAdded, DVsRemoved int
	// EqualityDeleteFiles counts the equality delete files added.
	EqualityDeleteFiles int
	// PositionsDeleted counts the rows newly deleted by the DVs.
	PositionsDeleted int64
	// DeleteFilesAdded counts the delete files (DVs or equality delete files) the
	// snapshot added, from its summary.
	DeleteFilesAdded int64
	// EqualityDeletesAdded counts the equality delete rows the snapshot added, from
	// its summary.
	EqualityDeletesAdded int64
	// Attempts is the number of attempts made.
	Attempts int
	// Reresolved is the number of attempts whose keys were resolved again because
	// the table changed since they were resolved.
	Reresolved int
}

// Commit commits w to the table ident of cat with c. See Committer.Commit.
func Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, c Committer, w Window) (CommitResult, error) {
	return c.Commit(ctx, cat, ident, w)
}

// Commit commits w as one snapshot, made by one RowDelta with the window's data
// files, the deletes of its keys and the removal of the DVs they replace, exactly
// once per (SinkID, WindowEndMs). Each attempt:
//
//  1. reloads the table and looks for the sink's token; a window already committed
//     is skipped (Skipped, also when an earlier attempt's response was lost);
//  2. in DV mode, brings every resolution up to the loaded snapshot (Resolver.Refresh):
//     a touched data file removed or whose DV was added or removed since the
//     resolution, and files added since, are read again; then merges the positions
//     per data file with its live DV (MergeDVs), never leaving two live DVs;
//  3. in equality mode, writes key-only equality delete files once (an equality
//     delete does not delete rows added in the same snapshot, so an upsert of a key
//     in one snapshot is right);
//  4. commits with iceberg-go's own retries off (it could replay a first DV over a
//     concurrent one); a conflict starts the next attempt, an unknown outcome too,
//     which then finds the token if the commit landed.
//
// A conflict that outlasts MaxAttempts wraps config.ErrCommitConflict.
func (c Committer) Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, w Window) (CommitResult, error) {
	name := strings.Join(ident, ".")
	fail := func(err error) (CommitResult, error) {
		return CommitResult{}, fmt.Errorf("iceberg: commit %s: %w", name, err)
	}
	if w.SinkID == "" {
		return fail(fmt.Errorf("%w: empty sink id", config.ErrInvalidConfig))
	}
	if len(c.KeyColumns) == 0 {
		return fail(config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column"))
	}
	props := ibg.Properties{}
	for k, v := range w.SnapshotProps {
		if strings.HasPrefix(k, write.SummaryReservedPrefix) {
			return fail(config.Errorf(config.KeySnapshotProperties+"."+k, "keys under %q are reserved for the sink", write.SummaryReservedPrefix))
		}
		props[k] = v
	}
	ref := write.WindowRef{SinkID: w.SinkID, RunID: w.RunID, WindowEndMs: w.WindowEndMs, LateID: w.LateID, ContentID: w.ContentID}
	files := write.DedupeDataFiles(w.DataFiles)
	resolver := Resolver{KeyColumns: c.KeyColumns, ChunkKeys: c.ChunkKeys}

	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = write.DefaultMaxAttempts
	}
	var (
		res      CommitResult
		lastErr  error
		conflict bool
		sent     bool
		resols   = append([]*Resolution(nil), w.Resolved...)
		ownKeys  bool // w.DeleteKeys resolved into resols
		eqFiles  []ibg.DataFile
	)
	for attempt := range maxAttempts {
		res.Attempts = attempt + 1
		if attempt > 0 {
			if err := c.sleep(ctx, attempt); err != nil {
				return fail(errors.Join(err, lastErr))
			}
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			if errors.Is(err, catalog.ErrNoSuchTable) {
				return fail(fmt.Errorf("%w: %w", config.ErrTableNotFound, err))
			}
			if ctx.Err() != nil {
				return fail(err)
			}
			lastErr, conflict = err, false
			continue
		}
		tok, done, newest, found, tokenProps, err := write.CheckWindow(tbl.Metadata(), table.MainBranch, ref)
		if err != nil {
			return fail(err)
		}
		if done {
			res.CommitResult = write.CommitResult{SnapshotID: tok.SnapshotID, SequenceNumber: tok.SequenceNumber, Skipped: !sent}
			if tok.Summary != nil {
				res.Operation = string(tok.Summary.Operation)
				res.FilesAdded, _ = strconv.ParseInt(tok.Summary.Properties["added-data-files"], 10, 64)
				res.RowsAdded, _ = strconv.ParseInt(tok.Summary.Properties["added-records"], 10, 64)
				res.deletesFromSummary(tok.Summary.Properties, true)
			}
			if res.Skipped {
				write.LogSkipped(ctx, name, w.SinkID, w.RunID, w.WindowEndMs, w.LateID, tok, len(files)+len(w.DeleteKeys)+len(w.Resolved))
			}
			return res, nil
		}
		format, err := c.format(tbl)
		if err != nil {
			return fail(err)
		}
		txTbl, err := withoutRetries(tbl, cat)
		if err != nil {
			return fail(err)
		}
		txn := txTbl.NewTransaction()
		throughKey := write.CommittedThroughKey(w.SinkID)
		if err := txn.SetProperties(ibg.Properties{throughKey: tokenProps[throughKey]}); err != nil {
			return fail(err)
		}
		prevMax, priorMax := committedSeqs(newest, found, w.SinkID, w.RunID)
		tokenProps[MaxCommittedSeqKey(w.SinkID)] = strconv.FormatInt(max(w.MaxSeq, prevMax), 10)
		if w.RunID != "" && priorMax != noSeq {
			tokenProps[PriorMaxSeqKey(w.SinkID)] = strconv.FormatInt(priorMax, 10)
		}
		res.LateID = tokenProps[write.LatePaneKey(w.SinkID)]
		attemptProps := withProps(props, tokenProps)
		var puffin string
		var deletes, removed []ibg.DataFile
		switch format {
		case config.DeleteFormatDV:
			if !ownKeys && len(w.DeleteKeys) > 0 {
				r, err := resolver.Resolve(ctx, tbl, w.DeleteKeys)
				if err != nil {
					return fail(err)
				}
				resols = append(resols, r)
				ownKeys = true
			}
			positions := map[string][]int64{}
			tasks := map[string]table.FileScanTask{}
			changed := false
			for _, r := range resols {
				ch, err := resolver.Refresh(ctx, tbl, r)
				if err != nil {
					return fail(err)
				}
				changed = changed || ch
				for _, f := range r.Files {
					positions[f.Path] = append(positions[f.Path], f.Positions...)
					tasks[f.Path] = r.tasks[f.Path]
				}
			}
			if changed {
				res.Reresolved++
			}
			m, err := MergeDVs(ctx, tbl, tasks, positions)
			if err != nil {
				return fail(err)
			}
			deletes, removed, puffin = m.Added, m.Replaced, m.PuffinPath
			res.DVsAdded, res.DVsRemoved, res.PositionsDeleted = len(m.Added), len(m.Replaced), m.Positions
			attemptProps = withProps(attemptProps, map[string]string{
				SummaryAddedDVs: strconv.Itoa(len(m.Added)), SummaryRemovedDVs: strconv.Itoa(len(m.Replaced))})
			if res.Reresolved > 0 {
				attemptProps[SummaryReresolved] = strconv.Itoa(res.Reresolved)
			}
		case config.DeleteFormatEquality:
			if eqFiles == nil && len(w.DeleteKeys) > 0 {
				if eqFiles, err = writeEqualityDeletes(ctx, txn, tbl, c.KeyColumns, w.DeleteKeys); err != nil {
					return fail(err)
				}
			}
			deletes = eqFiles
			res.EqualityDeleteFiles = len(eqFiles)
		}
		if len(files) == 0 && len(deletes) == 0 {
			return res, nil // nothing to change: no commit, no token
		}
		rd := txn.NewRowDelta(attemptProps)
		rd.AddRows(files...)
		rd.AddDeletes(deletes...)
		if len(removed) > 0 {
			rd.RemoveDeletes(removed...)
		}
		if err := rd.Commit(ctx); err != nil {
			removeFile(ctx, tbl, puffin)
			if write.IsConflict(err) {
				lastErr, conflict = err, true
				continue
			}
			return fail(err)
		}
		committed, err := txn.Commit(ctx)
		sent = true
		switch {
		case err == nil:
			snap := committed.Metadata().CurrentSnapshot()
			res.CommitResult = write.CommitResult{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
				FilesAdded: int64(len(files)), LateID: res.LateID}
			if snap.Summary != nil {
				res.Operation = string(snap.Summary.Operation)
				res.deletesFromSummary(snap.Summary.Properties, false)
			}
			for _, f := range files {
				res.RowsAdded += f.Count()
			}
			return res, nil
		case write.IsConflict(err):
			removeFile(ctx, tbl, puffin)
			lastErr, conflict = err, true
		case ctx.Err() != nil:
			return fail(errors.Join(ctx.Err(), err))
		default:
			// The commit may have landed: the next attempt looks for the token first.
			lastErr, conflict = err, false
		}
	}
	if conflict {
		return fail(fmt.Errorf("%w: gave up after %d attempts: %w", config.ErrCommitConflict, maxAttempts, lastErr))
	}
	return fail(fmt.Errorf("gave up after %d attempts: %w", maxAttempts, lastErr))
}

// deletesFromSummary sets the delete counts from a snapshot summary: always
// DeleteFilesAdded and EqualityDeletesAdded, and with all (a window found already
// committed) the counts this attempt did not compute: DVs added and removed,
// positions deleted and equality delete files.
func (r *CommitResult) deletesFromSummary(props ibg.Properties, all bool) {
	num := func(k string) int64 { n, _ := strconv.ParseInt(props[k], 10, 64); return n }
	r.DeleteFilesAdded = num("added-delete-files")
	r.EqualityDeletesAdded = num("added-equality-deletes")
	if all {
		r.DVsAdded, r.DVsRemoved = int(num(SummaryAddedDVs)), int(num(SummaryRemovedDVs))
		// A DV replacing another carries its positions: count the new ones only.
		r.PositionsDeleted = max(num("added-position-deletes")-num("removed-position-deletes"), 0)
		r.EqualityDeleteFiles = int(num("added-equality-delete-files"))
	}
}

// format picks the delete format for tbl.
func (c Committer) format(tbl *table.Table) (config.DeleteFormat, error) {
	v := tbl.Metadata().Version()
	f := c.DeleteFormat
	if f == "" {
		f = config.DeleteFormatDV
		if v < 3 {
			f = config.DeleteFormatEquality
		}
	}
	switch f {
	case config.DeleteFormatDV:
		if v < 3 {
			return "", &config.ConfigError{Key: config.KeyDeleteFormat,
				Err: fmt.Errorf("%w: deletion vectors need format version 3, table has %d", config.ErrUnsupported, v)}
		}
	case config.DeleteFormatEquality:
		if v < 2 {
			return "", &config.ConfigError{Key: config.KeyDeleteFormat,
				Err: fmt.Errorf("%w: equality deletes need format version 2, table has %d", config.ErrUnsupported, v)}
		}
		if err := checkEqualityPartitioning(tbl, c.KeyColumns); err != nil {
			return "", err
		}
	default:
		return "", config.Errorf(config.KeyDeleteFormat, "unknown delete format %q", f)
	}
	return f, nil
}

// checkEqualityPartitioning requires the partition source columns among the keys:
// an equality delete only applies within its partition, so without them a key's
// old row in another partition would survive (Flink has the same rule).
func checkEqualityPartitioning(tbl *table.Table, keys []string) error {
	sc := tbl.Schema()
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if _, void := f.Transform.(ibg.VoidTransform); void {
			continue
		}
		src, ok := sc.FindColumnName(f.SourceID())
		if !ok {
			continue
		}
		found := false
		for _, k := range keys {
			found = found || k == src
		}
		if !found {
			return &config.ConfigError{Key: config.KeyDeleteFormat, Err: fmt.Errorf(
				"%w: equality deletes on a table partitioned by %q need that column among equality_columns", config.ErrUnsupported, src)}
		}
	}
	return nil
}

// writeEqualityDeletes writes key-only equality delete files for keys.
func writeEqualityDeletes(ctx context.Context, txn *table.Transaction, tbl *table.Table, cols []string, keys [][]any) ([]ibg.DataFile, error) {
	sc := tbl.Schema()
	ids := make([]int, len(cols))
	for i, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return nil, config.Errorf(config.KeyEqualityColumns, "no column %q in the table schema", c)
		}
		ids[i] = f.ID
	}
	delSc, err := sc.Select(true, cols...)
	if err != nil {
		return nil, err
	}
	b, err := row.NewBatchBuilder(delSc, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	names := make([]string, len(cols))
	copy(names, cols)
	keySchema := row.NewSchema(names, nil)
	for _, k := range keys {
		if err := b.AppendRow(row.Of(keySchema, k)); err != nil {
			return nil, fmt.Errorf("equality delete key %v: %w", k, err)
		}
	}
	rec := b.NewBatch()
	recs := iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	files, err := txn.WriteEqualityDeletes(ctx, ids, recs)
	if err != nil {
		return nil, fmt.Errorf("write equality deletes: %w", err)
	}
	return files, nil
}

// withoutRetries returns tbl bound to cat with commit.retry.num-retries forced to 0
// for this commit only (never committed as a property): iceberg-go's retry would
// replay a RowDelta adding a first DV over a concurrent DV for the same data file.
func withoutRetries(tbl *table.Table, cat table.CatalogIO) (*table.Table, error) {
	meta := tbl.Metadata()
	if v, ok := meta.Properties()[table.CommitNumRetriesKey]; ok && v != "0" {
		b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
		if err != nil {
			return nil, err
		}
		props := ibg.Properties{}
		for k, v := range meta.Properties() {
			props[k] = v
		}
		props[table.CommitNumRetriesKey] = "0"
		if err := b.SetProperties(props); err != nil {
			return nil, err
		}
		if meta, err = b.Build(); err != nil {
			return nil, err
		}
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, cat), nil
}

func withProps(base ibg.Properties, extra map[string]string) ibg.Properties {
	out := make(ibg.Properties, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// removeFile deletes a Puffin file of a failed attempt, best effort.
func removeFile(ctx context.Context, tbl *table.Table, path string) {
	if path == "" {
		return
	}
	if fs, err := tbl.FS(ctx); err == nil {
		if r, ok := fs.(interface{ Remove(string) error }); ok {
			_ = r.Remove(path)
		}
	}
}

// sleep waits the jittered exponential backoff before attempt.
func (c Committer) sleep(ctx context.Context, attempt int) error {
	lo, hi := c.MinBackoff, c.MaxBackoff
	if lo <= 0 {
		lo = write.DefaultMinBackoff
	}
	if hi <= 0 {
		hi = write.DefaultMaxBackoff
	}
	hi = max(hi, lo)
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
