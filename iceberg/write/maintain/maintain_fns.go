package maintain

import (
	"context"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// The Beam shape of table maintenance: Maintain (a batch transform) and the inline
// maintenance step of a write.

// Spec is the configuration of the maintenance DoFns: a typed field of each,
// which the SDK serializes itself.
type Spec struct {
	Table, CatalogName string
	// CatalogProps is the catalog properties (never logged).
	CatalogProps map[string]string
	// Compact, Expire and Orphans say which operations run (in that order).
	Compact, Expire, Orphans bool
	// Filter selects the data files compaction considers (a SQL predicate).
	Filter     string
	Compaction CompactOptions
	Expiry     ExpireOptions
	// OrphanOlderThan is the age below which unreferenced files are kept; DryRun lists
	// orphans without deleting them.
	OrphanOlderThan time.Duration
	DryRun          bool
}

// NewExpireOptions returns the expiry of expire_older_than_seconds and retain_last
// (nil: not set).
func NewExpireOptions(olderThanSeconds, retainLast *int) ExpireOptions {
	var o ExpireOptions
	if olderThanSeconds != nil {
		// 0 expires everything iceberg-go may; its option takes a positive age.
		o.OlderThan = max(time.Duration(*olderThanSeconds)*time.Second, time.Nanosecond)
	}
	if retainLast != nil {
		o.RetainLast = *retainLast
	}
	return o
}

func (s Spec) catalog(ctx context.Context) (table.CatalogIO, table.Identifier, error) {
	ident, err := catalogs.ParseIdent(s.Table)
	if err != nil {
		return nil, nil, err
	}
	cat, err := catalogs.Get(ctx, s.CatalogName, s.CatalogProps)
	return cat, ident, err
}

// Report is what one Maintain run did to one table. The facade hands it to users
// as iceberg.MaintenanceReport, which has the same fields (a Go conversion) and
// documents them.
type Report struct {
	Table                                                                string
	DataFilesBefore, DeleteFilesBefore, DataFilesAfter, DeleteFilesAfter int64
	GroupsPlanned, GroupsCommitted, GroupsStale                          int
	FilesRewritten, FilesAdded, DeleteFilesRemoved                       int
	BytesBefore, BytesAfter                                              int64
	SnapshotsExpired, SnapshotsPinned                                    int
	OrphanFiles                                                          []string
	OrphanBytes                                                          int64
	OrphansRemoved                                                       int
	DryRun                                                               bool
}

func (r *Report) add(o Report) {
	r.DataFilesBefore += o.DataFilesBefore
	r.DeleteFilesBefore += o.DeleteFilesBefore
	r.GroupsPlanned += o.GroupsPlanned
	r.GroupsCommitted += o.GroupsCommitted
	r.GroupsStale += o.GroupsStale
	r.FilesRewritten += o.FilesRewritten
	r.FilesAdded += o.FilesAdded
	r.DeleteFilesRemoved += o.DeleteFilesRemoved
	r.BytesBefore += o.BytesBefore
	r.BytesAfter += o.BytesAfter
}

func (r *Report) addCompaction(res CompactResult) {
	if res.SnapshotID != 0 {
		r.GroupsCommitted++
	}
	if res.Stale {
		r.GroupsStale++
	}
	r.FilesRewritten += res.FilesRewritten
	r.FilesAdded += res.FilesAdded
	r.DeleteFilesRemoved += res.DeleteFilesRemoved
	r.BytesBefore += res.BytesBefore
	r.BytesAfter += res.BytesAfter
}

// Maintain adds the maintenance of one table to s: Impulse -> planMaintainFn (counts
// live files, plans compaction groups) -> Reshuffle -> compactGroupFn (rewrites and
// commits each group, in parallel across workers; each group is its own commit, so a
// failed group does not undo the others) -> GroupByKey by table -> finishMaintainFn
// (expiry, orphan removal, counts after) -> one Report.
func Maintain(s beam.Scope, spec Spec) beam.PCollection {
	s = s.Scope("iceberg.Maintain")
	imp := beam.Impulse(s)
	groups, start := beam.ParDo2(s.Scope("Plan"), &planMaintainFn{Spec: spec}, imp)
	done := beam.ParDo(s.Scope("Compact"), &compactGroupFn{Spec: spec}, beam.Reshuffle(s, groups))
	parts := beam.Flatten(s, start, done)
	return beam.ParDo(s.Scope("Finish"), &finishMaintainFn{Spec: spec}, beam.GroupByKey(s, parts))
}

type planMaintainFn struct{ Spec Spec }

func (f *planMaintainFn) ProcessElement(ctx context.Context, _ []byte, group func(CompactionGroup), start func(string, Report)) error {
	cat, ident, err := f.Spec.catalog(ctx)
	if err != nil {
		return err
	}
	tbl, err := commit.LoadTable(ctx, cat, ident)
	if err != nil {
		return config.WrapOp("maintain", f.Spec.Table, err)
	}
	live, err := CountLiveFiles(ctx, tbl)
	if err != nil {
		return config.WrapOp("maintain", f.Spec.Table, err)
	}
	rep := Report{Table: f.Spec.Table, DataFilesBefore: live.DataFiles, DeleteFilesBefore: live.DeleteFiles}
	if f.Spec.Compact {
		var filter ibg.BooleanExpression
		if f.Spec.Filter != "" {
			if filter, err = read.ParseFilter(f.Spec.Filter, tbl.Schema()); err != nil {
				return config.WrapOp("maintain", f.Spec.Table, err)
			}
		}
		gs, err := PlanCompaction(ctx, tbl, filter, f.Spec.Compaction)
		if err != nil {
			return config.OpErrorf("maintain", f.Spec.Table, "plan compaction: %w", err)
		}
		for _, g := range gs {
			group(g)
		}
		rep.GroupsPlanned = len(gs)
	}
	start(f.Spec.Table, rep)
	return nil
}

type compactGroupFn struct{ Spec Spec }

func (f *compactGroupFn) ProcessElement(ctx context.Context, g CompactionGroup, emit func(string, Report)) error {
	cat, ident, err := f.Spec.catalog(ctx)
	if err != nil {
		return err
	}
	res, err := CompactGroup(ctx, commit.Committer{}, cat, ident, g, f.Spec.Compaction)
	if err != nil {
		return err
	}
	rep := Report{Table: f.Spec.Table}
	rep.addCompaction(res)
	FilesCompacted.Inc(ctx, int64(res.FilesRewritten))
	emit(f.Spec.Table, rep)
	return nil
}

type finishMaintainFn struct{ Spec Spec }

func (f *finishMaintainFn) ProcessElement(ctx context.Context, name string, parts func(*Report) bool, emit func(Report)) error {
	rep := Report{Table: name}
	var p Report
	for parts(&p) {
		rep.add(p)
	}
	cat, ident, err := f.Spec.catalog(ctx)
	if err != nil {
		return err
	}
	if f.Spec.Expire {
		res, err := ExpireSnapshots(ctx, commit.Committer{}, cat, ident, f.Spec.Expiry)
		if err != nil {
			return err
		}
		rep.SnapshotsExpired, rep.SnapshotsPinned = res.Expired, res.Pinned
		SnapshotsExpired.Inc(ctx, int64(res.Expired))
	}
	tbl, err := commit.LoadTable(ctx, cat, ident)
	if err != nil {
		return config.WrapOp("maintain", name, err)
	}
	if f.Spec.Orphans {
		res, err := RemoveOrphanFiles(ctx, tbl, f.Spec.OrphanOlderThan, f.Spec.DryRun)
		if err != nil {
			return err
		}
		rep.OrphanFiles, rep.OrphanBytes, rep.OrphansRemoved, rep.DryRun = res.Files, res.Bytes, res.Removed, f.Spec.DryRun
	}
	live, err := CountLiveFiles(ctx, tbl)
	if err != nil {
		return config.WrapOp("maintain", name, err)
	}
	rep.DataFilesAfter, rep.DeleteFilesAfter = live.DataFiles, live.DeleteFiles
	log.Infof(ctx, "iceberg: maintain %s: data files %d -> %d, delete files %d -> %d; %d of %d groups rewritten (%d stale), %d snapshots expired (%d kept for sink tokens), %d orphan files",
		name, rep.DataFilesBefore, rep.DataFilesAfter, rep.DeleteFilesBefore, rep.DeleteFilesAfter, rep.GroupsCommitted, rep.GroupsPlanned,
		rep.GroupsStale, rep.SnapshotsExpired, rep.SnapshotsPinned, len(rep.OrphanFiles))
	emit(rep)
	return nil
}

// InlineMaintenance is a write's maintenance after its commits (see maintainFn).
type InlineMaintenance struct {
	// EveryCommits and Interval say when it runs (0: not by that measure).
	EveryCommits int
	Interval     time.Duration
	// Expire makes it expire snapshots with Expiry after compacting.
	Expire bool
	Expiry ExpireOptions
}

// Enabled reports whether the write maintains its tables.
func (m InlineMaintenance) Enabled() bool { return m.EveryCommits > 0 || m.Interval > 0 }

// InlineSpec is the configuration of a write's inline maintenance (AfterCommits):
// the write's catalog, its target file size and key columns, and when to run.
type InlineSpec struct {
	CatalogName string
	// CatalogProps is the catalog properties (never logged); TableCacheSize bounds the
	// process-wide table cache (0: the default).
	CatalogProps   map[string]string
	TableCacheSize int
	// TargetFileSizeBytes is the write's target file size (0: the table's own);
	// KeyColumns its equality columns, which compaction sorts by after the table's
	// sort order.
	TargetFileSizeBytes int64
	KeyColumns          []string
	Maintenance         InlineMaintenance
}

// AfterCommits adds inline maintenance to a write whose commits are snapshots
// (SnapshotInfo, in the global window): the commits are keyed by table and shuffled to
// maintainFn, a stateful step of its own, so a maintenance run never holds up the
// commit step. It returns nothing: the runs show in the maintenance counters and logs.
func AfterCommits(s beam.Scope, spec InlineSpec, snapshots beam.PCollection) {
	if !spec.Maintenance.Enabled() {
		return
	}
	s = s.Scope("Maintain")
	keyed := beam.ParDo(s, keyByTable, snapshots)
	beam.ParDo0(s, newMaintainFn(spec), beam.Reshuffle(s, keyed))
}

func keyByTable(i commit.SnapshotInfo) (string, commit.SnapshotInfo) { return i.Table, i }

// maintainFn counts each table's commits and, when the write's maintenance is due
// (EveryCommits commits or Interval since its last run; a run's first commit to a
// table reads both from the table's last compaction), compacts the table (small
// files and files with many deletes, iceberg-go's planner with Spark's rules,
// tiered: see CompactOptions.Tiered) and expires snapshots if asked, keeping the
// sinks' tokens. A run that fails is logged and retried at the next commit:
// maintenance never fails the write.
type maintainFn struct {
	Spec InlineSpec

	Commits state.Value[int]
	LastRun state.Value[int64]
}

func newMaintainFn(spec InlineSpec) *maintainFn {
	return &maintainFn{Spec: spec, Commits: state.MakeValueState[int]("commits"), LastRun: state.MakeValueState[int64]("last")}
}

func (f *maintainFn) Setup() { catalogs.SetTableCacheSize(f.Spec.TableCacheSize) }

func (f *maintainFn) ProcessElement(ctx context.Context, sp state.Provider, name string, info commit.SnapshotInfo) error {
	if info.Skipped {
		return nil
	}
	n, counted, err := f.Commits.Read(sp)
	if err != nil {
		return err
	}
	last, timed, err := f.LastRun.Read(sp)
	if err != nil {
		return err
	}
	now := time.Now()
	if !counted || !timed {
		// The run's first commit to the table: count on from the table's history, so
		// that batch jobs of a commit or a few each (and restarts) maintain too.
		n, last = f.sinceLastMaintenance(ctx, name, info.SnapshotID, now)
		if err := f.LastRun.Write(sp, last); err != nil {
			return err
		}
	}
	n++
	m := f.Spec.Maintenance
	due := (m.EveryCommits > 0 && n >= m.EveryCommits) || (m.Interval > 0 && now.Sub(time.UnixMilli(last)) >= m.Interval)
	if !due {
		return f.Commits.Write(sp, n)
	}
	if err := f.Commits.Write(sp, 0); err != nil {
		return err
	}
	if err := f.LastRun.Write(sp, now.UnixMilli()); err != nil {
		return err
	}
	if err := f.run(ctx, name); err != nil {
		MaintenanceFailures.Inc(ctx, 1)
		log.Warnf(ctx, "iceberg: maintain %s: %v (retried at a later commit)", name, err)
	}
	return nil
}

// sinceLastMaintenance reads the table's last maintenance (its newest compaction
// snapshot) for the run's first commit snap to table name: the commits before snap
// since then (at most EveryCommits - 1) and the time the interval counts from (epoch
// millis; see lastCompactionMs). Where the table cannot be loaded it logs and counts
// from now, as if the table had just been maintained.
func (f *maintainFn) sinceLastMaintenance(ctx context.Context, name string, snap int64, now time.Time) (prior int, lastMs int64) {
	m := f.Spec.Maintenance
	_, _, tbl, err := f.load(ctx, name)
	if err != nil {
		log.Warnf(ctx, "iceberg: maintain %s: reading the table's last maintenance: %v", name, err)
		return 0, now.UnixMilli()
	}
	if m.EveryCommits > 0 {
		prior = commitsSinceCompaction(tbl.Metadata(), snap, m.EveryCommits) - 1
	}
	lastMs = now.UnixMilli()
	if m.Interval > 0 {
		if ms := lastCompactionMs(tbl.Metadata(), snap); ms != 0 {
			lastMs = ms
		}
	}
	return prior, lastMs
}

// load returns the write's catalog, and the identifier and current state of table
// name.
func (f *maintainFn) load(ctx context.Context, name string) (catalog.Catalog, table.Identifier, *table.Table, error) {
	ident, err := catalogs.ParseIdent(name)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err := catalogs.Get(ctx, f.Spec.CatalogName, f.Spec.CatalogProps)
	if err != nil {
		return nil, nil, nil, err
	}
	tbl, err := commit.LoadTable(ctx, cat, ident)
	return cat, ident, tbl, err
}

func (f *maintainFn) run(ctx context.Context, name string) error {
	cat, ident, tbl, err := f.load(ctx, name)
	if err != nil {
		return err
	}
	opts := CompactOptions{TargetFileSize: f.Spec.TargetFileSizeBytes, Tiered: true, KeyColumns: f.Spec.KeyColumns}
	groups, err := PlanCompaction(ctx, tbl, nil, opts)
	if err != nil {
		return err
	}
	rep := Report{Table: name, GroupsPlanned: len(groups)}
	for _, g := range groups {
		res, err := CompactGroup(ctx, commit.Committer{}, cat, ident, g, opts)
		if err != nil {
			return err
		}
		rep.addCompaction(res)
	}
	FilesCompacted.Inc(ctx, int64(rep.FilesRewritten))
	if f.Spec.Maintenance.Expire {
		res, err := ExpireSnapshots(ctx, commit.Committer{}, cat, ident, f.Spec.Maintenance.Expiry)
		if err != nil {
			return err
		}
		rep.SnapshotsExpired = res.Expired
		SnapshotsExpired.Inc(ctx, int64(res.Expired))
	}
	MaintenanceRuns.Inc(ctx, 1)
	log.Infof(ctx, "iceberg: maintain %s: %d of %d groups rewritten (%d stale): %d files into %d, %d delete files dropped; %d snapshots expired",
		name, rep.GroupsCommitted, rep.GroupsPlanned, rep.GroupsStale, rep.FilesRewritten, rep.FilesAdded, rep.DeleteFilesRemoved, rep.SnapshotsExpired)
	return nil
}

// Counters of maintenance.
var (
	MaintenanceRuns     = beam.NewCounter(commit.MetricsNamespace, "maintenance_runs")
	MaintenanceFailures = beam.NewCounter(commit.MetricsNamespace, "maintenance_failures")
	FilesCompacted      = beam.NewCounter(commit.MetricsNamespace, "data_files_compacted")
	SnapshotsExpired    = beam.NewCounter(commit.MetricsNamespace, "snapshots_expired")
)

func init() {
	beam.RegisterType(reflect.TypeFor[planMaintainFn]())
	beam.RegisterType(reflect.TypeFor[compactGroupFn]())
	beam.RegisterType(reflect.TypeFor[finishMaintainFn]())
	beam.RegisterType(reflect.TypeFor[maintainFn]())
	beam.RegisterType(reflect.TypeFor[Report]())
	register.Function1x2(keyByTable)
	register.Emitter1[CompactionGroup]()
	register.Emitter2[string, Report]()
	register.Emitter1[Report]()
	register.Iter1[Report]()
}
