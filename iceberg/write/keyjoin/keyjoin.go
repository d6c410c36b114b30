// Package keyjoin is the key join of a batch merge-on-read write: it resolves the
// run's keys to row positions with one read of each candidate data file's key
// columns, whatever the number of workers, and hands each shard the positions of
// its keys beside its changes.
//
// Without it, each worker resolved the keys it parsed by one scan of the
// candidate files (cdc.Expected), and a shard whose keys another worker parsed
// fell back to the worker's key index, built from every candidate file: N
// workers read every candidate file N times. The join is a lookup join:
//
//  1. Keys: the keys of every change packet (cdc.AppendPacketKeys), grouped
//     into one element: the run's whole key set (cdc.Resolver.JoinKeys), held
//     up to the key index budget (cdc.ExpectedKeyBytes a key).
//  2. Plan (once the keys are all there): the table's current snapshot S and its
//     candidate data files, those whose key column bounds may hold a key
//     (cdc.JoinKeys.Plan); work items of files with the key set, about 32M rows
//     of files each (cdc.JoinKeys.Groups; within a bound on the copies of the
//     key set, see replicated), keyed by their number and grouped, so that the
//     runner spreads them over its workers; and a marker for every shard with
//     keys (cdc.JoinMarker): "resolved by the join at S".
//  3. Scan: each item is read by one worker (its files' key columns together,
//     in spans, by up to GOMAXPROCS goroutines; row groups whose statistics hold
//     no key are skipped, deleted positions are not hits) and probed against the
//     key set; the hits go to their keys' shards (cdc.JoinKeys.ScanFiles).
//  4. Blobs: a scan that read the whole key column of a large data file whose
//     keys ascend also built the file's key index blob (package
//     iceberg/internal/keyblob); the blobs go to one step that adds them to the
//     table's key index file (keyblob.IndexProperty; blobs.go). A later run's
//     scan resolves such a file by its blob instead of its key column.
//
// The markers and hits are join packets (cdc.IsJoinPacket), flattened with the
// change packets into the shards' GroupByKey: a shard window with a marker builds
// its resolution at S from its hits (cdc.ShardWindow), and the commit brings it
// up to the snapshot it commits on as any resolution (cdc.Resolver.Refresh, which
// reads no file of S again). When the keys are more than the budget holds, or the
// table is not in deletion vector mode, no marker is sent and the shards resolve
// their keys as without the join (cdc.Resolver.Resolve).
//
// The join runs in batch pipelines whose rows are in the global window; a
// windowed write keeps each worker's key index, which follows the table from
// window to window.
package keyjoin

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Counters of the key reads, which the shards' key resolutions count too.
var (
	// FilesRead counts the data files whose key columns were read.
	FilesRead = beam.NewCounter(commit.MetricsNamespace, "key_files_read")
	// BytesRead counts the stored bytes of the key columns read.
	BytesRead = beam.NewCounter(commit.MetricsNamespace, "key_column_bytes_read")
	// ReadMs counts the milliseconds spent reading key columns (for the key
	// index: bringing it up to the table).
	ReadMs = beam.NewCounter(commit.MetricsNamespace, "key_index_build_ms")
	// BlobsRead counts the data files whose keys were resolved by their key index
	// blob (package iceberg/internal/keyblob) instead of their key column.
	BlobsRead = beam.NewCounter(commit.MetricsNamespace, "key_index_blobs_read")
	// BlobsWritten counts the key index blobs added to the table's key index file.
	BlobsWritten = beam.NewCounter(commit.MetricsNamespace, "key_index_blobs_written")
)

// Config is what the join needs of the write.
type Config struct {
	// Catalog and CatalogProps open the catalog of Table.
	Catalog      string
	CatalogProps map[string]string
	Table        string
	// Refresh is the age past which a table cached by the worker is loaded again.
	Refresh time.Duration
	// DeleteFormat is the write's delete_format: the join runs in deletion vector
	// mode only (see cdc.ResolveFormat).
	DeleteFormat string
	// Resolver has the key columns and the key index budget.
	Resolver cdc.Resolver
}

// Resolve adds the key join of the change packets (KV<int, []byte>: shard,
// packet) to s and returns its join packets, keyed by shard, to flatten with the
// packets before the shards' GroupByKey.
func Resolve(s beam.Scope, cfg Config, packets beam.PCollection) beam.PCollection {
	s = s.Scope("KeyJoin")
	keys := beam.ParDo(s.Scope("KeysOfPackets"), keysFn, packets)
	all := beam.GroupByKey(s.Scope("AllKeys"), keys)
	works, markers := beam.ParDo2(s.Scope("PlanCandidateFiles"), &planFn{Config: cfg}, all)
	hits, blobs := beam.ParDo2(s.Scope("ReadKeysOfFiles"), &scanFn{Config: cfg}, beam.GroupByKey(s.Scope("SpreadFiles"), works))
	beam.ParDo0(s.Scope("AttachKeyIndexBlobs"), &attachFn{Config: cfg}, beam.GroupByKey(s.Scope("AllBlobs"), blobs))
	return beam.Flatten(s.Scope("MarkersAndHits"), markers, hits)
}

// keysFn emits the keys of a change packet of shard as one element of the key
// set, under key 0: they are grouped into one.
func keysFn(shard int, p []byte, emit func(int, []byte)) error {
	b, err := cdc.AppendPacketKeys(nil, shard, p)
	emit(0, b)
	return err
}

// replicated bounds the bytes of the key set copies the plan sends with the
// work items (one copy each): the files are spread over at most this many bytes'
// worth of items.
const replicated = 256 << 20

// work is what one scanFn call reads: candidate data files of snapshot Snapshot,
// with the key set (its elements, see cdc.AppendPacketKeys).
type work struct {
	Snapshot int64
	Paths    []string
	Keys     [][]byte
}

// load loads cfg's table, from the worker's cache unless fresh.
func (cfg Config) load(ctx context.Context, fresh bool) (*table.Table, error) {
	r := cfg.Refresh
	if fresh {
		r = 0
	}
	tbl, err := catalogs.LoadTable(ctx, cfg.Catalog, cfg.CatalogProps, cfg.Table, r)
	if err != nil {
		return nil, config.WrapOp("write", cfg.Table, err)
	}
	return tbl, nil
}

// planFn plans the join (step 2 of the package comment). The work items carry
// the key set themselves: a side input would do (it is sent to every worker
// once), but prism (v2.78.0) keeps its scheduler loop busy on a core while a
// stage that reads a side input runs a bundle (an ordinary stage with side
// inputs and nothing pending is rescheduled at once), which took a core of two
// from the key read (50M rows, 10,000 changes: 0.9 s -> 1.4 s).
type planFn struct {
	Config Config
}

func (f *planFn) ProcessElement(ctx context.Context, _ int, keys func(*[]byte) bool, works func(int, work), markers func(int, []byte)) error {
	tbl, err := f.Config.load(ctx, true)
	if errors.Is(err, config.ErrTableNotFound) {
		return nil // no change parsed: the parse stage creates it from the first
	}
	if err != nil {
		return err
	}
	format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(f.Config.DeleteFormat), f.Config.Resolver.KeyColumns)
	if err != nil || format != config.DeleteFormatDV {
		return nil // the shards report an unusable format, when they delete
	}
	var elems [][]byte
	size := 1
	j, err := f.Config.Resolver.JoinKeys(tbl, func(b *[]byte) bool {
		if !keys(b) {
			return false
		}
		elems, size = append(elems, slices.Clone(*b)), size+len(*b)
		return true
	})
	if err != nil || j == nil {
		return config.WrapOp("write", f.Config.Table, err)
	}
	snap, files, shards, err := j.Plan(ctx, tbl)
	if err != nil {
		return config.WrapOp("write", f.Config.Table, err)
	}
	marker := cdc.JoinMarker(snap, files)
	for _, shard := range shards {
		markers(shard, marker)
	}
	// Items of about 32M rows of candidate files (cdc.JoinKeys.Groups), within the
	// copies' bound. One item a file made a worker read a table's small files one
	// after the other, and copy and index the key set for each: 50M rows in one
	// file and 45 small ones, on one worker, 10,000 changes took 2.1-2.5 s
	// against 1.0 s for the worker's own scan, 100,000 took 6.4 s against 1.9.
	for i, paths := range j.Groups(files, max(1, replicated/size)) {
		works(i, work{Snapshot: snap, Keys: elems, Paths: paths})
	}
	return nil
}

// scanFn reads the key columns of the candidate files of its work items and
// emits their hits by shard (step 3 of the package comment).
type scanFn struct {
	Config Config

	tbl *table.Table
}

func (f *scanFn) ProcessElement(ctx context.Context, _ int, works func(*work) bool, emit func(int, []byte), blobs func(int, blob)) error {
	var w work
	for works(&w) {
		if err := f.scan(ctx, w, emit, blobs); err != nil {
			return config.WrapOp("write", f.Config.Table, err)
		}
	}
	return nil
}

// scan reads the files of w, and emits the key index blobs it built under key 0.
func (f *scanFn) scan(ctx context.Context, w work, emit func(int, []byte), blobs func(int, blob)) error {
	if f.tbl == nil || f.tbl.Metadata().SnapshotByID(w.Snapshot) == nil {
		tbl, err := f.Config.load(ctx, f.tbl != nil)
		if err == nil && tbl.Metadata().SnapshotByID(w.Snapshot) == nil {
			tbl, err = f.Config.load(ctx, true) // a cached table older than the plan
		}
		if err != nil {
			return err
		}
		f.tbl = tbl
	}
	i := 0
	j, err := f.Config.Resolver.JoinKeys(f.tbl, func(b *[]byte) bool {
		if i == len(w.Keys) {
			return false
		}
		*b, i = w.Keys[i], i+1
		return true
	})
	if err == nil && j == nil {
		err = errors.New("the key set is past the key index budget, which the plan found within it")
	}
	if err != nil {
		return err
	}
	start := time.Now()
	sc, err := j.ScanFiles(ctx, f.tbl, w.Snapshot, w.Paths)
	// Counts of 0 are not reported (see write.countShard).
	if err == nil && len(w.Paths) > 0 {
		FilesRead.Inc(ctx, int64(len(w.Paths)))
	}
	if sc.Bytes > 0 {
		BytesRead.Inc(ctx, sc.Bytes)
	}
	if sc.FromBlobs > 0 {
		BlobsRead.Inc(ctx, int64(sc.FromBlobs))
	}
	if ms := time.Since(start).Milliseconds(); ms > 0 {
		ReadMs.Inc(ctx, ms)
	}
	if err != nil {
		return err
	}
	for _, shard := range slices.Sorted(maps.Keys(sc.Hits)) {
		for _, p := range sc.Hits[shard] {
			emit(shard, p)
		}
	}
	for _, b := range sc.Blobs {
		blobs(0, blob{Snapshot: w.Snapshot, Field: j.KeyField(), DataFile: b.DataFile, Rows: b.Rows, Data: b.Data})
	}
	return nil
}

func init() {
	register.Function3x1(keysFn)
	register.DoFn5x1[context.Context, int, func(*[]byte) bool, func(int, work), func(int, []byte), error](&planFn{})
	register.DoFn5x1[context.Context, int, func(*work) bool, func(int, []byte), func(int, blob), error](&scanFn{})
	register.DoFn3x1[context.Context, int, func(*blob) bool, error](&attachFn{})
	register.Emitter2[int, blob]()
	register.Iter1[blob]()
	beam.RegisterType(reflect.TypeFor[blob]())
	register.Emitter2[int, []byte]()
	register.Emitter2[int, work]()
	register.Iter1[[]byte]()
	register.Iter1[work]()
	beam.RegisterType(reflect.TypeFor[work]())
}
