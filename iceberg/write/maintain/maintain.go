package maintain

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Table maintenance as plain Go: compaction that folds deletes into rewritten files,
// snapshot expiry that keeps the sinks' tokens, and orphan file removal. The Beam shape
// is in maintain_fns.go. Every commit goes through commit.Committer.CommitTable (the rewrite and expiry Changes).

// SummaryCompactionID is the snapshot summary key holding the id of the compaction
// group a rewrite snapshot committed: a retry after a lost response finds it.
const SummaryCompactionID = "beam.maintenance.compaction-id"

// Defaults of compaction (those of Spark's rewrite_data_files).
const (
	DefaultMinInputFiles = 5
	DefaultDeleteRatio   = 0.3
	// maxStaleRedos bounds how often a group is rewritten again because concurrent
	// writers changed the deletes of its files while it was being rewritten.
	maxStaleRedos = 3
)

// CompactOptions tune which data files compaction rewrites.
type CompactOptions struct {
	// TargetFileSize is the size of the files written; 0 takes the table's
	// write.target-file-size-bytes (iceberg-go's default when unset).
	TargetFileSize int64
	// MinInputFiles is the number of files a partition's bin needs to be rewritten
	// for size alone (default DefaultMinInputFiles).
	MinInputFiles int
	// DeleteFileThreshold rewrites any data file with at least this many delete files
	// (a DV counts one); 0 never rewrites a file for its delete count alone.
	DeleteFileThreshold int
	// RewriteAll rewrites every data file selected, whatever its size and deletes.
	RewriteAll bool
	// Tiered leaves out of a group each file picked for its size alone (not for
	// its deletes) that is larger than the group's other files together, largest
	// first: a file is then rewritten only into one at least twice its size, so
	// a row is rewritten about log2(target / first file size) times at most, as
	// in size-tiered compaction. Without it a large file just under the small-file
	// limit (a seed of 50M narrow rows, 300 MB for a 512 MB target) is rewritten
	// with every handful of small files a stream adds. Inline maintenance sets it;
	// Maintain keeps Spark's rules.
	Tiered bool
	// KeyColumns are the columns a table without identifier fields is sorted by
	// after its sort order (see executeGroup): inline maintenance gives the sink's
	// equality_columns, so that a table created by another engine compacts into
	// files of tight key ranges too.
	KeyColumns []string
}

func (o CompactOptions) target(tbl *table.Table) int64 {
	if o.TargetFileSize > 0 {
		return o.TargetFileSize
	}
	return tbl.Properties().GetInt64(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)
}

// CompactionGroup is one bin of data files of one partition that compaction rewrites
// together into files of the target size, with their deletes applied.
type CompactionGroup struct {
	// Table is the table ("db.table").
	Table string
	// Partition names the partition (for logs).
	Partition string
	// Files are the data file paths.
	Files []string
	// Bytes is their total size.
	Bytes int64
}

// LiveFiles counts a table's live files.
type LiveFiles struct {
	// DataFiles and DeleteFiles count live data and delete files (a deletion vector
	// counts one, however many share its Puffin file).
	DataFiles, DeleteFiles int64
	// Rows is the number of rows of the live data files, deleted ones included.
	Rows int64
}

// CountLiveFiles counts tbl's live files on main.
func CountLiveFiles(ctx context.Context, tbl *table.Table) (LiveFiles, error) {
	if tbl.CurrentSnapshot() == nil {
		return LiveFiles{}, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return LiveFiles{}, err
	}
	var out LiveFiles
	deletes := map[string]struct{}{}
	for _, t := range tasks {
		out.DataFiles++
		out.Rows += t.File.Count()
		for _, d := range taskDeletes(t) {
			deletes[deleteIdentity(d)] = struct{}{}
		}
	}
	out.DeleteFiles = int64(len(deletes))
	return out, nil
}

// PlanCompaction plans the compaction of tbl's data files matching filter (all when
// nil): each partition's candidate files (smaller than 75% of the target size, or
// with too many deleted rows: DeleteFileThreshold delete files, or deletion vectors
// covering DefaultDeleteRatio of their rows) are bin-packed by iceberg-go's planner
// into groups of about the target size. A group is kept when it has MinInputFiles
// files, or more than one file and the target size, or a file with too many deletes
// (Spark's rules; iceberg-go alone would drop a lone file full of deletes), after
// CompactOptions.Tiered leaves out the files too large to rewrite for their size.
func PlanCompaction(ctx context.Context, tbl *table.Table, filter ibg.BooleanExpression, o CompactOptions) ([]CompactionGroup, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	var opts []table.ScanOption
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	target := o.target(tbl)
	minInput := cmp.Or(o.MinInputFiles, DefaultMinInputFiles)
	threshold := o.DeleteFileThreshold
	if threshold <= 0 {
		threshold = math.MaxInt
	}
	tooManyDeletes := func(t table.FileScanTask) bool {
		if len(taskDeletes(t)) >= threshold {
			return true
		}
		var deleted int64
		for _, d := range t.DeletionVectorFiles {
			deleted += d.Count()
		}
		return t.File.Count() > 0 && float64(min(deleted, t.File.Count()))/float64(t.File.Count()) >= DefaultDeleteRatio
	}
	var bins [][]table.FileScanTask
	if o.RewriteAll {
		bins = packAll(tasks, target)
	} else {
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
		cfg.MinInputFiles, cfg.DeleteFileThreshold, cfg.DeleteRatioThreshold = 1, threshold, DefaultDeleteRatio
		plan, err := cfg.PlanCompaction(tasks)
		if err != nil {
			return nil, err
		}
		for _, g := range plan.Groups {
			bins = append(bins, g.Tasks)
		}
	}
	name := strings.Join(tbl.Identifier(), ".")
	var groups []CompactionGroup
	for _, bin := range bins {
		if o.Tiered && !o.RewriteAll {
			bin = tier(bin, tooManyDeletes)
			if len(bin) == 0 {
				continue
			}
		}
		var bytes int64
		for _, t := range bin {
			bytes += t.File.FileSizeBytes()
		}
		keep := o.RewriteAll || len(bin) >= minInput || (len(bin) > 1 && bytes >= target) ||
			slices.ContainsFunc(bin, tooManyDeletes)
		if !keep {
			continue
		}
		g := CompactionGroup{Table: name, Partition: partitionName(bin[0].File), Bytes: bytes}
		for _, t := range bin {
			g.Files = append(g.Files, t.File.FilePath())
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// tier drops from bin, largest first, the files that are not picked for their
// deletes and are larger than the rest of the bin together (see
// CompactOptions.Tiered). It keeps the order of the others.
func tier(bin []table.FileScanTask, deletes func(table.FileScanTask) bool) []table.FileScanTask {
	var total int64
	for _, t := range bin {
		total += t.File.FileSizeBytes()
	}
	bySize := slices.Clone(bin)
	slices.SortStableFunc(bySize, func(a, b table.FileScanTask) int { return cmp.Compare(b.File.FileSizeBytes(), a.File.FileSizeBytes()) })
	drop := map[string]bool{}
	for _, t := range bySize {
		size := t.File.FileSizeBytes()
		if deletes(t) || size <= total-size {
			break // every smaller file is at most the rest too
		}
		drop[t.File.FilePath()] = true
		total -= size
	}
	return slices.DeleteFunc(slices.Clone(bin), func(t table.FileScanTask) bool { return drop[t.File.FilePath()] })
}

// packAll bin-packs every task of each partition, largest first, into bins of about
// target bytes (first fit).
func packAll(tasks []table.FileScanTask, target int64) [][]table.FileScanTask {
	byPart := map[string][]table.FileScanTask{}
	var order []string
	for _, t := range tasks {
		k := partitionName(t.File)
		if _, ok := byPart[k]; !ok {
			order = append(order, k)
		}
		byPart[k] = append(byPart[k], t)
	}
	var bins [][]table.FileScanTask
	for _, k := range order {
		ts := byPart[k]
		slices.SortFunc(ts, func(a, b table.FileScanTask) int { return cmp.Compare(b.File.FileSizeBytes(), a.File.FileSizeBytes()) })
		var part [][]table.FileScanTask
		var sizes []int64
	next:
		for _, t := range ts {
			for i := range part {
				if sizes[i]+t.File.FileSizeBytes() <= target {
					part[i], sizes[i] = append(part[i], t), sizes[i]+t.File.FileSizeBytes()
					continue next
				}
			}
			part, sizes = append(part, []table.FileScanTask{t}), append(sizes, t.File.FileSizeBytes())
		}
		bins = append(bins, part...)
	}
	return bins
}

// partitionName is "spec <id> {<field id>=<value>, ...}" (field ids in order).
func partitionName(f ibg.DataFile) string {
	p := f.Partition()
	ids := make([]int, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "spec %d {", f.SpecID())
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d=%v", id, p[id])
	}
	b.WriteString("}")
	return b.String()
}

func taskDeletes(t table.FileScanTask) []ibg.DataFile {
	out := make([]ibg.DataFile, 0, len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles))
	out = append(out, t.DeleteFiles...)
	out = append(out, t.EqualityDeleteFiles...)
	return append(out, t.DeletionVectorFiles...)
}

// deleteIdentity tells delete files apart: a deletion vector by its Puffin file and
// blob offset, any other delete file by its path.
func deleteIdentity(d ibg.DataFile) string {
	if off := d.ContentOffset(); off != nil {
		return d.FilePath() + "@" + strconv.FormatInt(*off, 10)
	}
	return d.FilePath()
}

// CompactResult is what compacting one group did.
type CompactResult struct {
	// SnapshotID is the rewrite snapshot (0 when nothing was committed).
	SnapshotID int64
	// FilesRewritten and FilesAdded count the data files replaced and written;
	// DeleteFilesRemoved the delete files (DVs, position deletes) dropped with them.
	FilesRewritten, FilesAdded, DeleteFilesRemoved int
	// BytesBefore and BytesAfter are the sizes of the files replaced and written.
	BytesBefore, BytesAfter int64
	// Stale is true when the group was given up: concurrent writers kept changing the
	// deletes of its files (maxStaleRedos times); the next run compacts them.
	Stale bool
	// Redos counts rewrites done again because concurrent deletes made one stale.
	Redos int
}

// CompactGroup rewrites the data files of g that are still live in table ident,
// with their deletes applied and their rows sorted by the table's sort order and
// identifier fields (executeGroup), and commits the replacement as one rewrite snapshot.
// A concurrent writer never loses a delete: every commit attempt first checks, on
// the freshly loaded table, that each file still has exactly the deletes the rewrite
// applied; when one changed (a new or replacing DV, an equality delete), the
// rewritten files are deleted and the group is rewritten again from the new state
// (at most maxStaleRedos times, then given up with Stale). iceberg-go's rewrite
// validator checks the same for commits that land between the check and the commit.
// A lost response is recovered by the group's id in the snapshot summary.
func CompactGroup(ctx context.Context, c commit.Committer, cat table.CatalogIO, ident table.Identifier, g CompactionGroup, o CompactOptions) (CompactResult, error) {
	name := strings.Join(ident, ".")
	var res CompactResult
	for redo := 0; redo <= maxStaleRedos; redo++ {
		res.Redos = redo
		tbl, err := commit.LoadTable(ctx, cat, ident)
		if err != nil {
			return res, config.WrapOp("compact", name, err)
		}
		tasks, err := liveTasks(ctx, tbl, g.Files)
		if err != nil {
			return res, config.WrapOp("compact", name, err)
		}
		if len(tasks) == 0 || (len(tasks) == 1 && len(taskDeletes(tasks[0])) == 0 && !o.RewriteAll) {
			return res, nil // rewritten or removed by someone else meanwhile
		}
		group := table.CompactionTaskGroup{PartitionKey: g.Partition, Tasks: tasks}
		for _, t := range tasks {
			group.TotalSizeBytes += t.File.FileSizeBytes()
		}
		gr, err := executeGroup(ctx, tbl, group, o.target(tbl), o.KeyColumns)
		if err != nil {
			removeFiles(ctx, tbl, gr.NewDataFiles)
			return res, config.WrapOp("compact", name, err)
		}
		gr.SafePosDeletes = ownPositionDeletes(gr.SafePosDeletes, tasks)
		stale, err := commitRewrite(ctx, c, cat, ident, tbl, tasks, gr, &res)
		if err != nil {
			return res, config.WrapOp("compact", name, err)
		}
		if !stale {
			indexCompacted(ctx, c, cat, ident, tbl, gr.NewDataFiles, o.KeyColumns, res.SnapshotID)
			return res, nil
		}
		removeFiles(ctx, tbl, gr.NewDataFiles)
		log.Infof(ctx, "iceberg: compact %s: deletes of group %s changed while it was rewritten; rewriting it again", name, g.Partition)
	}
	res.Stale = true
	log.Warnf(ctx, "iceberg: compact %s: gave up group %s after %d rewrites: concurrent deletes kept changing its files", name, g.Partition, maxStaleRedos+1)
	return res, nil
}

// indexCompacted adds the key index blobs of the large files a compaction of tbl
// committed at snapshot snap (cdc.KeyBlobs) to the table's key index file
// (commit.Committer.AttachKeyIndex), so that the first merge-on-read batch after
// the compaction resolves their keys by their blobs too. Only when compaction
// sorted them by one long key column first (its identifier field, or the key
// column inline maintenance gives): their keys then ascend. Best effort: a
// failure is logged, the compaction stands.
func indexCompacted(ctx context.Context, c commit.Committer, cat table.CatalogIO, ident table.Identifier, tbl *table.Table, files []ibg.DataFile, keys []string, snap int64) {
	cols, ids := sortColumns(tbl, keys), tbl.Schema().IdentifierFieldIDs
	if len(cols) == 0 || len(ids) > 1 || len(ids) == 0 && len(keys) != 1 {
		return
	}
	f, ok := tbl.Schema().FindFieldByName(cols[0].name)
	if !ok || len(ids) == 1 && f.ID != ids[0] || len(ids) == 0 && cols[0].name != keys[0] {
		return // sorted by another column first: the keys do not ascend
	}
	blobs, err := cdc.KeyBlobs(ctx, tbl, f.Name, files)
	if err == nil && len(blobs) > 0 {
		_, err = c.AttachKeyIndex(ctx, cat, ident, snap, f.ID, blobs)
	}
	if err != nil {
		log.Warnf(ctx, "iceberg: compact %s: key index blobs of the compacted files not attached: %v (the next batch reads their key columns)", strings.Join(ident, "."), err)
	}
}

// ownPositionDeletes keeps the position delete files that reference one data file of
// tasks: a group commits on its own, so a position delete file that may also hold
// positions of files outside the group (partition-scoped, written by other engines on
// format-version 2) must stay live. Once its files are rewritten its positions in
// them apply to nothing.
func ownPositionDeletes(dels []ibg.DataFile, tasks []table.FileScanTask) []ibg.DataFile {
	in := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		in[t.File.FilePath()] = true
	}
	var out []ibg.DataFile
	for _, d := range dels {
		if ref := referencedFile(d); ref != "" && in[ref] {
			out = append(out, d)
		}
	}
	return out
}

// filePathFieldID is the field id of a position delete file's file_path column.
const filePathFieldID = 2147483546

// referencedFile is the one data file a position delete file references: its
// referenced_data_file, or (format-version 2) equal lower and upper bounds of its
// file_path column; "" when it may reference several.
func referencedFile(d ibg.DataFile) string {
	if ref := d.ReferencedDataFile(); ref != nil {
		return *ref
	}
	lo, hi := d.LowerBoundValues()[filePathFieldID], d.UpperBoundValues()[filePathFieldID]
	if lo != nil && string(lo) == string(hi) {
		return string(lo)
	}
	return ""
}

// commitRewrite commits gr (made from tasks of base) through c's loop (a rewrite);
// stale reports that the deletes of a file changed since base, and nothing was
// committed. A lost response is recognised by the group's id in the summary.
func commitRewrite(ctx context.Context, c commit.Committer, cat table.CatalogIO, ident table.Identifier, base *table.Table, tasks []table.FileScanTask, gr table.CompactionGroupResult, res *CompactResult) (stale bool, err error) {
	rw := &rewrite{id: uuid.NewString(), base: base, want: deleteSets(tasks), result: gr, paths: make([]string, len(tasks))}
	for i, t := range tasks {
		rw.paths[i] = t.File.FilePath()
	}
	out, err := c.CommitTable(ctx, cat, ident, rw)
	if out.Table != nil {
		rw.found = out.Table.CurrentSnapshot()
	}
	if err == nil && rw.found != nil {
		res.SnapshotID = rw.found.SnapshotID
		res.FilesRewritten, res.FilesAdded = len(gr.OldDataFiles), len(gr.NewDataFiles)
		res.DeleteFilesRemoved = len(gr.SafePosDeletes) + len(gr.SafeDeletionVectors)
		res.BytesBefore, res.BytesAfter = gr.BytesBefore, gr.BytesAfter
	}
	return rw.stale, err
}

// rewrite is the Change of a compaction group: its rewritten files replace the
// group's files, unless their deletes changed since the rewrite read them (stale).
type rewrite struct {
	id     string // the group's id in the snapshot summary (SummaryCompactionID)
	base   *table.Table
	want   map[string]string // the deletes of each rewritten file (deleteSets)
	paths  []string
	result table.CompactionGroupResult
	stale  bool
	found  *table.Snapshot // an earlier attempt's commit, whose response was lost
}

func (r *rewrite) Op() string { return "compact" }

// Stage commits the rewrite when each file still has the deletes the rewrite applied;
// otherwise it ends, stale.
func (r *rewrite) Stage(ctx context.Context, a *commit.Attempt) (bool, error) {
	cur, err := liveTasks(ctx, a.Table, r.paths)
	if err != nil {
		return false, err
	}
	if !sameDeletes(r.want, deleteSets(cur)) {
		r.stale = true
		return true, nil
	}
	// A concurrent delete for one of the files that lands before the commit fails
	// it with table.ErrConflictingDeleteFiles (a conflict): the next attempt sees
	// it and reports the rewrite stale; any other race is retried.
	rw := a.Txn.NewRewrite(ibg.Properties{SummaryCompactionID: r.id})
	rw.ApplyResult(r.result)
	return false, rw.Commit(ctx)
}

// Landed finds the group's id in a snapshot made since base.
func (r *rewrite) Landed(_ context.Context, a *commit.Attempt) (bool, error) {
	r.found = findSummary(a.Table, r.base, SummaryCompactionID, r.id)
	return r.found != nil, nil
}

// Abandon does nothing: CompactGroup removes the rewritten files when the group
// does not commit.
func (r *rewrite) Abandon(context.Context, *commit.Attempt) {}

// liveTasks returns the scan tasks of tbl's live data files among paths.
func liveTasks(ctx context.Context, tbl *table.Table, paths []string) ([]table.FileScanTask, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	want := make(map[string]struct{}, len(paths))
	for _, p := range paths {
		want[p] = struct{}{}
	}
	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	var out []table.FileScanTask
	for _, t := range all {
		if _, ok := want[t.File.FilePath()]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// deleteSets maps each task's data file to the sorted identities of its deletes.
func deleteSets(tasks []table.FileScanTask) map[string]string {
	out := make(map[string]string, len(tasks))
	for _, t := range tasks {
		ids := make([]string, 0, 1)
		for _, d := range taskDeletes(t) {
			ids = append(ids, deleteIdentity(d))
		}
		slices.Sort(ids)
		out[t.File.FilePath()] = strings.Join(ids, "\x00")
	}
	return out
}

func sameDeletes(want, got map[string]string) bool {
	if len(want) != len(got) {
		return false // a file is no longer live
	}
	for p, d := range want {
		if g, ok := got[p]; !ok || g != d {
			return false
		}
	}
	return true
}

// commitsSinceCompaction returns the number of snapshots on the main ancestry of snap
// (main's head when snap is not in meta), snap included, newer than the newest
// compaction snapshot (SummaryCompactionID), counting up to limit.
func commitsSinceCompaction(meta table.Metadata, snap int64, limit int) int {
	n := 0
	for _, s := range mainAncestry(meta, snap) {
		if n >= limit || isCompaction(s) {
			break
		}
		n++
	}
	return n
}

// lastCompactionMs returns the commit time (epoch millis) of the newest compaction
// snapshot on the main ancestry of snap (main's head when snap is not in meta): the
// table's last maintenance. A table never compacted counts from the oldest snapshot of
// that ancestry; one without snapshots gives 0.
func lastCompactionMs(meta table.Metadata, snap int64) int64 {
	var ms int64
	for _, s := range mainAncestry(meta, snap) {
		ms = s.TimestampMs
		if isCompaction(s) {
			break
		}
	}
	return ms
}

// mainAncestry returns snap and its ancestors, newest first (main's head and its
// ancestors when snap is not in meta; nil for a table without snapshots).
func mainAncestry(meta table.Metadata, snap int64) []table.Snapshot {
	if meta.SnapshotByID(snap) == nil {
		head := meta.CurrentSnapshot()
		if head == nil {
			return nil
		}
		snap = head.SnapshotID
	}
	return table.AncestorsOf(snap, meta.SnapshotByID)
}

// isCompaction reports whether s is a rewrite that icebeam's maintenance committed.
func isCompaction(s table.Snapshot) bool {
	return s.Summary != nil && s.Summary.Properties[SummaryCompactionID] != ""
}

// findSummary returns the snapshot of tbl's main ancestry, newer than base's current
// snapshot, whose summary has key=value.
func findSummary(tbl, base *table.Table, key, value string) *table.Snapshot {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return nil
	}
	stop := int64(-1)
	if s := base.CurrentSnapshot(); s != nil {
		stop = s.SnapshotID
	}
	for _, s := range table.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID) {
		if s.SnapshotID == stop {
			return nil
		}
		if s.Summary != nil && s.Summary.Properties[key] == value {
			return &s
		}
	}
	return nil
}

// removeFiles deletes files written for a rewrite that was not committed.
func removeFiles(ctx context.Context, tbl *table.Table, files []ibg.DataFile) {
	if len(files) == 0 {
		return
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		if err := fs.Remove(f.FilePath()); err != nil {
			log.Warnf(ctx, "iceberg: compact %s: could not remove uncommitted file %s: %v", strings.Join(tbl.Identifier(), "."), f.FilePath(), err)
		}
	}
}

// ExpireOptions say which snapshots expiry removes: those older than OlderThan
// beyond the newest RetainLast of each branch (iceberg-go's rules, and the table's
// history.expire.* properties when unset).
type ExpireOptions struct {
	OlderThan  time.Duration
	RetainLast int
}

// ExpireResult is what expiry did.
type ExpireResult struct {
	// Expired counts the snapshots removed; Pinned those kept only because they hold a
	// sink's newest token (see ExpireSnapshots).
	Expired, Pinned int
	// PinnedBy lists the sinks whose tokens pinned snapshots.
	PinnedBy []string
}

// ExpireSnapshots expires the snapshots of table ident that iceberg-go's
// ExpireSnapshots would, except the one holding the newest token on main of every sink
// whose token is younger than SinkTokenHorizon: a restarted sink stays exactly-once
// with its full token (runs, late panes, sequence numbers). The snapshots between
// that token and main's head expire as any other, so a sink that stopped committing
// (a finished backfill, an idle stream) holds back one snapshot, not the history after
// it. The sink reaches its token across the gap through the table property the expiry
// commit records (TokenSnapshotKey, see walkSink). An older token may expire: the sink
// then falls back to the committed-through table property every commit keeps, which
// still skips every window it committed. Files only the removed snapshots referenced
// are deleted after the commit. The commit goes through commit.Committer.CommitTable; a lost
// response is harmless (expiry is idempotent).
func ExpireSnapshots(ctx context.Context, c commit.Committer, cat table.CatalogIO, ident table.Identifier, o ExpireOptions) (ExpireResult, error) {
	name := strings.Join(ident, ".")
	e := &expiry{ident: ident, opts: o}
	res, err := c.CommitTable(ctx, cat, ident, e)
	if err != nil {
		return e.out, config.WrapOp("expire snapshots", name, err)
	}
	if res.Table != nil {
		e.out.Expired = len(e.removed)
		if err := e.expire.PostCommit(ctx, e.base, res.Table); err != nil {
			log.Warnf(ctx, "iceberg: expire snapshots %s: removing the files of expired snapshots: %v (remove_orphan_files removes them later)", name, err)
		}
	}
	if e.out.Pinned > 0 {
		log.Infof(ctx, "iceberg: expire snapshots %s: kept %d snapshots that hold the newest tokens of sinks %s",
			name, e.out.Pinned, strings.Join(e.out.PinnedBy, ", "))
	}
	return e.out, nil
}

// expiry is the Change of ExpireSnapshots: a raw commit of the selected snapshots'
// removal.
type expiry struct {
	ident   table.Identifier
	opts    ExpireOptions
	out     ExpireResult
	base    *table.Table // the table the last attempt expired from
	removed []int64
	expire  table.Update // that attempt's removal, whose PostCommit deletes files
}

func (e *expiry) Op() string { return "expire snapshots" }

// Stage selects the snapshots to remove (expiryUpdates) and sets a.Raw to their
// removal, asserting the table and main's head the selection was made on.
func (e *expiry) Stage(_ context.Context, a *commit.Attempt) (bool, error) {
	e.out, e.base = ExpireResult{}, a.Table
	var updates []table.Update
	var err error
	e.removed, e.expire, updates, err = expiryUpdates(a, e.opts, &e.out)
	if err != nil || len(e.removed) == 0 {
		return true, err
	}
	reqs := []table.Requirement{table.AssertTableUUID(a.Table.Metadata().TableUUID())}
	if head := a.Table.CurrentSnapshot(); head != nil {
		id := head.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(table.MainBranch, &id))
	}
	a.Raw = &table.TableCommit{Identifier: e.ident, Requirements: reqs, Updates: updates}
	return false, nil
}

// Landed is false: a lost response is harmless, expiry is idempotent.
func (e *expiry) Landed(context.Context, *commit.Attempt) (bool, error) { return false, nil }

// Abandon does nothing: an expiry writes no file before its commit.
func (e *expiry) Abandon(context.Context, *commit.Attempt) {}

// expiryUpdates selects the snapshots of a.Table that ExpireSnapshots removes with o:
// those iceberg-go's expiry (staged in a.Txn, not committed) removes, minus the sinks'
// pinned tokens (counted in out). updates removes the refs iceberg-go drops, then the
// snapshots (expire), and records the pinned tokens.
func expiryUpdates(a *commit.Attempt, o ExpireOptions, out *ExpireResult) (removed []int64, expire table.Update, updates []table.Update, err error) {
	meta := a.Table.Metadata()
	var opts []table.ExpireSnapshotsOpt
	if o.OlderThan > 0 {
		opts = append(opts, table.WithOlderThan(o.OlderThan))
	}
	if o.RetainLast > 0 {
		opts = append(opts, table.WithRetainLast(o.RetainLast))
	}
	if err := a.Txn.ExpireSnapshots(append(opts, table.WithPostCommit(false))...); err != nil {
		return nil, nil, nil, err
	}
	staged, err := a.Txn.StagedTable()
	if err != nil {
		return nil, nil, nil, err
	}
	kept := map[int64]bool{}
	for _, s := range staged.Metadata().Snapshots() {
		kept[s.SnapshotID] = true
	}
	pins, records, stale, pinnedBy := sinkPins(meta, time.Now().Add(-SinkTokenHorizon).UnixMilli())
	for _, s := range meta.Snapshots() {
		switch {
		case kept[s.SnapshotID]:
		case pins[s.SnapshotID]:
			out.Pinned++
		default:
			removed = append(removed, s.SnapshotID)
		}
	}
	out.PinnedBy = pinnedBy
	if len(removed) == 0 {
		return nil, nil, nil, nil
	}
	stagedRefs := map[string]bool{}
	for r := range staged.Metadata().Refs() {
		stagedRefs[r] = true
	}
	for r := range meta.Refs() {
		if !stagedRefs[r] {
			updates = append(updates, table.NewRemoveSnapshotRefUpdate(r))
		}
	}
	expire = table.NewRemoveSnapshotsUpdate(removed, true)
	updates = append(updates, expire)
	if len(records) > 0 {
		updates = append(updates, table.NewSetPropertiesUpdate(records))
	}
	if len(stale) > 0 {
		updates = append(updates, table.NewRemovePropertiesUpdate(stale))
	}
	return removed, expire, updates, nil
}

// SinkTokenHorizon is how recent a sink's newest token must be for expiry to keep it
// (see ExpireSnapshots): a streaming sink commits every window (or heartbeat), a batch
// sink rerun within a week keeps its full token.
const SinkTokenHorizon = 7 * 24 * time.Hour

// sinkPins returns, for every sink whose newest token on main (see FindToken) is in a
// snapshot made at or after sinceMs, that snapshot (pins) and the TokenSnapshotKey
// property value recording it under main's head (records), and those sinks. stale
// lists the TokenSnapshotKey properties of sinks pinned no more.
func sinkPins(meta table.Metadata, sinceMs int64) (pins map[int64]bool, records map[string]string, stale, sinks []string) {
	head := meta.SnapshotByName(table.MainBranch)
	if head == nil {
		return nil, nil, nil, nil
	}
	seen := map[string]bool{}
	for k := range meta.Properties() {
		if sink, ok := strings.CutPrefix(k, commit.PropertyTokenSnapshotPrefix); ok {
			seen[sink] = true
		}
	}
	for _, s := range table.AncestorsOf(head.SnapshotID, meta.SnapshotByID) {
		if s.Summary == nil {
			continue
		}
		for k := range s.Summary.Properties {
			if sink, ok := strings.CutPrefix(k, commit.SummaryCommittedThroughPrefix); ok {
				seen[sink] = true
			}
		}
	}
	pins, records = map[int64]bool{}, map[string]string{}
	for _, sink := range slices.Sorted(maps.Keys(seen)) {
		tok, found, err := commit.FindToken(meta, table.MainBranch, sink)
		if snap := meta.SnapshotByID(tok.SnapshotID); err == nil && found && snap != nil && snap.TimestampMs >= sinceMs {
			pins[tok.SnapshotID] = true
			records[commit.TokenSnapshotKey(sink)] = strconv.FormatInt(tok.SnapshotID, 10) + "@" + strconv.FormatInt(head.SnapshotID, 10)
			sinks = append(sinks, sink)
		} else if _, ok := meta.Properties()[commit.TokenSnapshotKey(sink)]; ok {
			stale = append(stale, commit.TokenSnapshotKey(sink))
		}
	}
	return pins, records, stale, sinks
}

// OrphanResult is what orphan removal found (and removed unless DryRun).
type OrphanResult struct {
	// Files are the orphan files: under the table location, older than the cut-off,
	// and referenced by no live metadata.
	Files []string
	// Bytes is their total size.
	Bytes int64
	// Removed counts the files deleted (0 on a dry run).
	Removed int
}

// RemoveOrphanFiles removes the files under tbl's location that no metadata of tbl
// references and that are older than olderThan (files younger than that may belong
// to a commit in progress), or only lists them when dryRun. The table's key index
// file (keyblob.IndexProperty), which only a table property references, is kept.
func RemoveOrphanFiles(ctx context.Context, tbl *table.Table, olderThan time.Duration, dryRun bool) (OrphanResult, error) {
	name := strings.Join(tbl.Identifier(), ".")
	fs, err := tbl.FS(ctx)
	if err != nil {
		return OrphanResult{}, config.WrapOp("remove orphan files", name, err)
	}
	index := tbl.Properties()[keyblob.IndexProperty]
	kept := func(p string) bool { return index != "" && trimFileScheme(p) == trimFileScheme(index) }
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(olderThan), table.WithDryRun(dryRun),
		table.WithDeleteFunc(func(p string) error {
			if kept(p) {
				return nil
			}
			return fs.Remove(p)
		}))
	if err != nil {
		return OrphanResult{}, config.WrapOp("remove orphan files", name, err)
	}
	var out OrphanResult
	for _, f := range res.OrphanFiles {
		if !kept(f.Path) {
			out.Files, out.Bytes = append(out.Files, f.Path), out.Bytes+f.SizeBytes
		}
	}
	for _, p := range res.DeletedFiles {
		if !kept(p) {
			out.Removed++
		}
	}
	slices.Sort(out.Files)
	return out, nil
}

// trimFileScheme drops a file:// or file: scheme, as orphan listings and
// metadata may spell a local path either way.
func trimFileScheme(p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:")
}
