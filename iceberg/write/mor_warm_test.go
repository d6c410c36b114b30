package write

import (
	"context"
	"maps"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestParseWarmsIndexOnlyWhenStreaming: a batch pipeline's parse stage, whatever
// the number of its bundles, starts no build of the worker's key index (its
// shards resolve the keys it parsed by one read of the candidate files, see
// cdc.Expected): a key outside every data file's bounds then resolves without
// reading a key column. A streaming pipeline's parse stage does start it (the
// index serves the next windows): the same resolution reports the file the
// warm-up read.
func TestParseWarmsIndexOnlyWhenStreaming(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
	)
	var seed [][]any
	for id := range int64(1000) {
		seed = append(seed, []any{id, "c"})
	}
	for _, tc := range []struct {
		name      string
		windowed  bool
		wantFiles int
	}{{"batch", false, 0}, {"streaming", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "db." + tc.name // a table, and so a key index, of its own
			tbl := icebergtest.CreateTable(t, lc.Catalog, name, sc)
			tbl, err := icebergtest.AppendRecordsContext(ctx, tbl, icebergtest.Records(t, sc, seed))
			if err != nil {
				t.Fatal(err)
			}
			spec := Spec{Table: name, CatalogName: lc.Name, CatalogProps: lc.Props, SinkID: "s", MergeOnRead: true,
				ChangeTypeColumn: "op", SequenceNumberColumn: "seq", EqualityColumns: []string{"id"},
				ChangeTypeMap: map[string]string{"u": "UPDATE_AFTER"},
				Upsert:        true, NumShards: 2, SorterMemoryMB: 1, KeyIndexMemoryMB: 16, Windowed: tc.windowed}
			f := &changeParseFn{Spec: spec}
			if err := f.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			w := window.IntervalWindow{Start: mtime.FromMilliseconds(0), End: mtime.FromMilliseconds(1000)}
			emit := func(beam.EventTime, int, []byte) {}
			dead := func(d DeadLetter) { t.Errorf("dead letter: %+v", d) }
			for b := range int64(3) { // three bundles
				f.StartBundle(ctx, emit, dead)
				for i := range int64(10) {
					id := b*10 + i
					r := row.New([]string{"op", "seq", "id", "city"}, []any{"u", id + 1, id, "x"})
					if err := f.ProcessElement(ctx, w, r, emit, dead); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.FinishBundle(ctx, emit, dead); err != nil {
					t.Fatal(err)
				}
			}
			res, err := spec.resolver().Resolve(ctx, tbl, [][]any{{int64(1_000_000)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.FilesRead != tc.wantFiles || res.Found() != 0 {
				t.Errorf("a key outside the table's bounds: %d key files read (%v), %d found; want %d read, none found",
					res.FilesRead, res.Scanned, res.Found(), tc.wantFiles)
			}
		})
	}
}

// TestCountShardSkipsZero: a shard's counts of 0 are not reported, so that a
// bundle that read nothing cannot replace the count of one that did (prism keeps
// one payload per metric it does not know yet, see countShard).
func TestCountShardSkipsZero(t *testing.T) {
	ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), "shards")
	countShard(ctx, cdc.ShardStats{KeyFilesRead: 1, KeyBytesRead: 10})
	got := map[string]int64{}
	for _, c := range metrics.ResultsExtractor(ctx).AllMetrics().Counters() {
		got[c.Key.Name] = c.Result()
	}
	if want := map[string]int64{"key_files_read": 1, "key_column_bytes_read": 10}; !maps.Equal(got, want) {
		t.Errorf("counters %v, want %v", got, want)
	}
}
