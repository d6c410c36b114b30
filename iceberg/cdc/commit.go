package cdc

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
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
// once per (SinkID, WindowEndMs), through write.Committer's loop (token check, retry,
// lost-response recovery). On each attempt it adds, for the freshly loaded table:
//
//   - in DV mode, every resolution brought up to the loaded snapshot
//     (Resolver.Refresh: a touched data file removed or whose DV was added or
//     removed since the resolution, and files added since, are read again), the
//     positions merged per data file with its live DV (MergeDVs, never two live DVs),
//     and the replaced DVs removed; the Puffin files of an attempt that loses a race
//     are deleted;
//   - in equality mode, key-only equality delete files, written once (an equality
//     delete does not delete rows added in the same snapshot, so an upsert of a key
//     in one snapshot is right);
//   - the sink's highest committed sequence number and the DV counts in the summary.
//
// A conflict that outlasts MaxAttempts wraps config.ErrCommitConflict.
func (c Committer) Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, w Window) (CommitResult, error) {
	name := strings.Join(ident, ".")
	fail := func(err error) (CommitResult, error) {
		return CommitResult{}, fmt.Errorf("iceberg: commit %s: %w", name, err)
	}
	if len(c.KeyColumns) == 0 {
		return fail(config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column"))
	}
	for k := range w.SnapshotProps {
		if strings.HasPrefix(k, write.SummaryReservedPrefix) {
			return fail(config.Errorf(config.KeySnapshotProperties+"."+k, "keys under %q are reserved for the sink", write.SummaryReservedPrefix))
		}
	}
	resolver := Resolver{KeyColumns: c.KeyColumns, ChunkKeys: c.ChunkKeys}
	var (
		res     CommitResult
		resols  = append([]*Resolution(nil), w.Resolved...)
		ownKeys bool // w.DeleteKeys resolved into resols
		eqFiles []ibg.DataFile
	)
	prepare := func(ctx context.Context, a write.Attempt) (write.Prepared, error) {
		tbl := a.Table
		format, err := c.format(tbl)
		if err != nil {
			return write.Prepared{}, err
		}
		prevMax, priorMax := committedSeqs(a.Newest, a.Found, w.SinkID, w.RunID)
		props := map[string]string{MaxCommittedSeqKey(w.SinkID): strconv.FormatInt(max(w.MaxSeq, prevMax), 10)}
		if w.RunID != "" && priorMax != noSeq {
			props[PriorMaxSeqKey(w.SinkID)] = strconv.FormatInt(priorMax, 10)
		}
		switch format {
		case config.DeleteFormatDV:
			if !ownKeys && len(w.DeleteKeys) > 0 {
				r, err := resolver.Resolve(ctx, tbl, w.DeleteKeys)
				if err != nil {
					return write.Prepared{}, err
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
					return write.Prepared{}, err
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
				return write.Prepared{}, err
			}
			res.DVsAdded, res.DVsRemoved, res.PositionsDeleted = len(m.Added), len(m.Replaced), m.Positions
			props[SummaryAddedDVs] = strconv.Itoa(len(m.Added))
			props[SummaryRemovedDVs] = strconv.Itoa(len(m.Replaced))
			if res.Reresolved > 0 {
				props[SummaryReresolved] = strconv.Itoa(res.Reresolved)
			}
			return write.Prepared{Deletes: m.Added, Removed: m.Replaced, Props: props,
				Abandon: func() { m.removeFiles(ctx, tbl) }}, nil
		default: // config.DeleteFormatEquality
			if eqFiles == nil && len(w.DeleteKeys) > 0 {
				if eqFiles, err = writeEqualityDeletes(ctx, a.Txn, tbl, c.KeyColumns, w.DeleteKeys); err != nil {
					return write.Prepared{}, err
				}
			}
			res.EqualityDeleteFiles = len(eqFiles)
			return write.Prepared{Deletes: eqFiles, Props: props}, nil
		}
	}
	cr, err := write.Committer{MaxAttempts: c.MaxAttempts, MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff}.Commit(ctx, cat, ident, write.CommitRequest{
		SinkID: w.SinkID, RunID: w.RunID, WindowEndMs: w.WindowEndMs, LateID: w.LateID, ContentID: w.ContentID,
		DataFiles: w.DataFiles, SnapshotProps: w.SnapshotProps, Prepare: prepare, FreshFiles: true,
	})
	if err != nil {
		return CommitResult{}, err
	}
	res.CommitResult = cr
	res.Attempts = cr.Attempts
	if cr.Summary != nil {
		res.deletesFromSummary(cr.Summary, cr.Skipped)
	}
	return res, nil
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
