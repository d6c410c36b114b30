package write

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/iceberg/write/schema"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// bundleFiles runs the writers of spec over bundles as a runner would (each bundle
// started, processed and finished; with spec.Hash, the packets grouped by key as a
// GroupByKey does and each group written by hashWriteFn) and returns the encoded files
// of each table and the dead letters.
func bundleFiles(t *testing.T, spec Spec, bundles [][]row.Row) (map[string][]datafile.Encoded, []DeadLetter) {
	t.Helper()
	ctx := context.Background()
	files := map[string][]datafile.Encoded{}
	var dead []DeadLetter
	onDead := func(d DeadLetter) { dead = append(dead, d) }
	onTimedDead := func(_ beam.EventTime, d DeadLetter) { onDead(d) }
	addFiles := func(table string, p Part) { files[table] = append(files[table], p.Files...) }
	var (
		start   func()
		process func(row.Row) error
		finish  func() error
		packets map[string][][]byte
	)
	direct := func(_ beam.EventTime, key string, p Part) { addFiles(key, p) }
	if spec.Hash || spec.DirectLimit > 0 {
		rf := &hashRouteFn{Spec: spec}
		if err := rf.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		packets = map[string][][]byte{}
		emit := func(_ beam.EventTime, key string, b []byte) { packets[key] = append(packets[key], b) }
		start = func() { rf.StartBundle(ctx, emit, direct, onTimedDead) }
		process = func(r row.Row) error {
			return rf.ProcessElement(ctx, window.GlobalWindow{}, r, emit, direct, onTimedDead)
		}
		finish = func() error { return rf.FinishBundle(ctx, emit, direct, onTimedDead) }
	} else {
		wf := &writeFn{Spec: spec}
		if err := wf.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		start = func() { wf.StartBundle(ctx, direct, onDead) }
		process = func(r row.Row) error { return wf.ProcessElement(ctx, window.GlobalWindow{}, r, direct, onDead) }
		finish = func() error { return wf.FinishBundle(ctx, direct, onDead) }
	}
	for _, bundle := range bundles {
		start()
		for _, r := range bundle {
			if err := process(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
	}
	if packets != nil {
		wf := &hashWriteFn{Spec: spec}
		if err := wf.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		wf.StartBundle(direct)
		for _, key := range slices.Sorted(maps.Keys(packets)) {
			ps := packets[key]
			next := func(p *[]byte) bool {
				if len(ps) == 0 {
					return false
				}
				*p, ps = ps[0], ps[1:]
				return true
			}
			if err := wf.ProcessElement(ctx, window.GlobalWindow{}, key, next, direct); err != nil {
				t.Fatal(err)
			}
		}
		if err := wf.FinishBundle(direct); err != nil {
			t.Fatal(err)
		}
	}
	return files, dead
}

// dataFiles returns the data files of table ident, after checking the table.
func dataFiles(t *testing.T, lc *icebergtest.LocalCatalog, ident table.Identifier) []ibg.DataFile {
	t.Helper()
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if err := icebergtest.CheckTable(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	files, err := icebergtest.DataFilesContext(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// regionRows returns n rows spread over regions r0..r<regions-1>.
func regionRows(n, regions int) []row.Row {
	names := []string{"id", "region", "name"}
	var rows []row.Row
	for i := range n {
		rows = append(rows, row.New(names, []any{int64(i), fmt.Sprintf("r%d", i%regions), "n"}))
	}
	return rows
}

// createRegionTable creates db.t partitioned by region.
func createRegionTable(t *testing.T, lc *icebergtest.LocalCatalog) {
	t.Helper()
	createRegionsTable(t, lc, "t", schema.CreateOptions{PartitionFields: writetest.ParsePartitions(t, "region")})
}

// createRegionsTable creates db.<name> with the columns of regionRows.
func createRegionsTable(t *testing.T, lc *icebergtest.LocalCatalog, name string, opts schema.CreateOptions) {
	t.Helper()
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64},
		ibg.NestedField{ID: 2, Name: "region", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "name", Type: ibg.PrimitiveTypes.String})
	if _, _, err := schema.EnsureTable(context.Background(), lc.Catalog, table.Identifier{"db", name}, sc, opts); err != nil {
		t.Fatal(err)
	}
}

func TestHashDistributionManySmallBundles(t *testing.T) {
	const (
		n       = 400
		regions = 4
		bundles = 20
	)
	rows := regionRows(n, regions)
	bad := row.New([]string{"id", "region", "name"}, []any{"not-a-long", "r0", "x"})
	var split [][]row.Row
	for i := range bundles {
		part := slices.Clone(rows[i*n/bundles : (i+1)*n/bundles])
		split = append(split, append(part, bad))
	}
	got := map[bool]int{}
	for _, hash := range []bool{false, true} {
		lc := icebergtest.NewLocalCatalog(t)
		createRegionTable(t, lc)
		spec := testSpec(t, lc, "db.t")
		spec.Hash = hash
		files, dead := bundleFiles(t, spec, split)
		if len(dead) != bundles {
			t.Errorf("hash=%v: %d dead letters, want %d", hash, len(dead), bundles)
		}
		var written int64
		for _, f := range files["db.t"] {
			written += f.Rows
		}
		if written != n {
			t.Errorf("hash=%v: files hold %d rows, want %d", hash, written, n)
		}
		got[hash] = len(files["db.t"])
	}
	if got[false] != bundles*regions || got[true] != regions {
		t.Errorf("files over %d bundles of %d partitions: %d per-bundle, %d hash; want %d and %d",
			bundles, regions, got[false], got[true], bundles*regions, regions)
	}
}

// TestHashDistributionUnpartitioned: with distribution_mode=hash, the rows of an
// unpartitioned table are written by the bundles' writers, as with none (Iceberg's
// Spark and Flink writers do the same), while a partitioned table of the same write
// gets one file per partition; the dead letters of both are kept. Through Append, the
// files of both reach their commits.
func TestHashDistributionUnpartitioned(t *testing.T) {
	const (
		n       = 400
		regions = 4
		bundles = 5
	)
	rows := regionRows(n, regions)
	for i, r := range rows { // alternate groups of regions ids to db.t (partitioned) and db.flat
		dest := "t"
		if (i/regions)%2 == 1 {
			dest = "flat"
		}
		rows[i] = row.New([]string{"id", "region", "name"}, []any{r.Values()[0], r.Values()[1], dest})
	}
	bad := row.New([]string{"id", "region", "name"}, []any{"not-a-long", "r0", "flat"})
	var split [][]row.Row
	for i := range bundles {
		part := slices.Clone(rows[i*n/bundles : (i+1)*n/bundles])
		split = append(split, append(part, bad))
	}
	lc := icebergtest.NewLocalCatalog(t)
	createRegionTable(t, lc)
	createRegionsTable(t, lc, "flat", schema.CreateOptions{})
	spec := testSpec(t, lc, "db.{name}")
	spec.Hash = true
	files, dead := bundleFiles(t, spec, split)
	if len(dead) != bundles {
		t.Errorf("%d dead letters, want %d (one per bundle)", len(dead), bundles)
	}
	for _, d := range dead {
		if d.Table != "db.flat" || !strings.Contains(d.Reason, `"id"`) {
			t.Errorf("dead letter %+v, want db.flat's bad id", d)
		}
	}
	for table, want := range map[string]int{"db.t": regions, "db.flat": bundles} {
		var written int64
		for _, f := range files[table] {
			written += f.Rows
		}
		if len(files[table]) != want || written != n/2 {
			t.Errorf("%s: %d files with %d rows, want %d files with %d rows", table, len(files[table]), written, want, n/2)
		}
	}

	// The same rows through Append: the unpartitioned table's files take the direct output.
	lc = icebergtest.NewLocalCatalog(t)
	createRegionTable(t, lc)
	createRegionsTable(t, lc, "flat", schema.CreateOptions{})
	spec = testSpec(t, lc, "db.{name}")
	spec.Hash = true
	snaps, dead := runAppend(t, spec, append(slices.Clone(rows), bad))
	if len(snaps) != 2 || len(dead) != 1 {
		t.Fatalf("snapshots %+v, dead letters %+v; want one snapshot per table and the bad row", snaps, dead)
	}
	for _, name := range []string{"t", "flat"} {
		if got := writetest.CountRows(t, lc.Catalog, table.Identifier{"db", name}); got != n/2 {
			t.Errorf("db.%s holds %d rows, want %d", name, got, n/2)
		}
		dataFiles(t, lc, table.Identifier{"db", name}) // checks the table
	}
}

func TestAppendHashDistribution(t *testing.T) {
	const n, regions = 400, 4
	lc := icebergtest.NewLocalCatalog(t)
	createRegionTable(t, lc)
	spec := testSpec(t, lc, "db.t")
	spec.Hash = true
	rows := append(regionRows(n, regions), row.New([]string{"id", "region", "name"}, []any{"not-a-long", "r0", "x"}))
	snaps, dead := runAppend(t, spec, rows)
	if len(snaps) != 1 || snaps[0].RowsAdded != n {
		t.Fatalf("snapshots = %+v, want one of %d rows", snaps, n)
	}
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, `"id"`) {
		t.Fatalf("dead letters = %+v, want the row with a string id", dead)
	}
	if got := writetest.CountRows(t, lc.Catalog, table.Identifier{"db", "t"}); got != n {
		t.Fatalf("rows = %d, want %d", got, n)
	}
	perPartition := map[string]int{}
	for _, f := range dataFiles(t, lc, table.Identifier{"db", "t"}) {
		perPartition[fmt.Sprint(f.Partition())]++
	}
	if len(perPartition) != regions {
		t.Fatalf("files in %d partitions, want %d", len(perPartition), regions)
	}
	for p, k := range perPartition {
		if k != 1 {
			t.Errorf("partition %s has %d files, want 1", p, k)
		}
	}
}

func TestPartitionKeyer(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64},
		ibg.NestedField{ID: 2, Name: "ts", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 3, Name: "meta", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 4, Name: "src", Type: ibg.PrimitiveTypes.String}}}})
	tbl, _, err := schema.EnsureTable(context.Background(), lc.Catalog, table.Identifier{"db", "k"}, sc, schema.CreateOptions{
		PartitionFields: writetest.ParsePartitions(t, "day(ts)", "bucket[4](id)", "meta.src")})
	if err != nil {
		t.Fatal(err)
	}
	k, err := newPartitionKeyer(tbl)
	if err != nil {
		t.Fatal(err)
	}
	rs := row.SchemaOf(tbl.Schema())
	meta := func(s any) row.Row { return row.New([]string{"src"}, []any{s}) }
	const hour = int64(3_600_000_000)
	key := func(id int64, ts int64, m any) string {
		return k.key(row.Of(rs, []any{id, ibg.Timestamp(ts), m}))
	}
	if a, b := key(1, hour, meta("a")), key(1, 2*hour, meta("a")); a != b {
		t.Errorf("same day, same bucket: keys %q and %q differ", a, b)
	}
	if a, b := key(1, hour, meta("a")), key(1, 25*hour, meta("a")); a == b {
		t.Errorf("different days share key %q", a)
	}
	if a, b := key(1, hour, meta("a")), key(1, hour, meta("b")); a == b {
		t.Errorf("different nested sources share key %q", a)
	}
	if a, b := key(1, hour, nil), key(1, hour, meta(nil)); a != b {
		t.Errorf("null struct and null field: keys %q and %q differ", a, b)
	}
	if a, b := key(1, hour, meta("a")), key(1, hour, meta(nil)); a == b {
		t.Errorf("null and non-null source share key %q", a)
	}
}

func TestTargetFileSize(t *testing.T) {
	names := []string{"id", "s"}
	var rows []row.Row
	for i := range 20_000 {
		rows = append(rows, row.New(names, []any{int64(i), fmt.Sprintf("value %d %x", i, i*7919)}))
	}
	tests := []struct {
		name      string
		tableProp map[string]string
		writeProp map[string]string
	}{
		{"default", nil, nil},
		{"table_properties", map[string]string{table.WriteTargetFileSizeBytesKey: "65536"}, nil},
		{"write_properties", nil, map[string]string{table.WriteTargetFileSizeBytesKey: "65536"}},
	}
	// Files roll only once bytes reach the output, at the end of a row group: small row
	// groups in every case, so that only the target differs.
	const rowGroup = "write.parquet.row-group-limit"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			wp := map[string]string{rowGroup: "1000"}
			maps.Copy(wp, tc.writeProp)
			spec := Spec{Table: "db.t", CatalogName: lc.Name, CatalogProps: lc.Props, SinkID: "target-" + tc.name,
				TableProps: tc.tableProp, WriteProps: wp}
			var err error
			if spec.TargetFileSizeBytes, err = TargetFileSize(config.KeyWriteProperties, wp); err != nil {
				t.Fatal(err)
			}
			runAppend(t, spec, rows)
			fs := dataFiles(t, lc, table.Identifier{"db", "t"})
			if got := writetest.CountRows(t, lc.Catalog, table.Identifier{"db", "t"}); got != int64(len(rows)) {
				t.Fatalf("rows = %d, want %d", got, len(rows))
			}
			small := tc.tableProp != nil || tc.writeProp != nil
			if small && len(fs) < 2 {
				t.Errorf("a 64 KiB target wrote %d file(s), want the files rolled", len(fs))
			}
			if !small && len(fs) != 1 {
				t.Errorf("default target wrote %d files, want 1", len(fs))
			}
		})
	}

	t.Run("bad values", func(t *testing.T) {
		for _, key := range []string{config.KeyTableProperties, config.KeyWriteProperties} {
			for _, v := range []string{"0", "-5", "big", ""} {
				props := map[string]string{table.WriteTargetFileSizeBytesKey: v}
				_, err := TargetFileSize(key, props)
				var ce *config.ConfigError
				if !errors.Is(err, config.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Key != key+"."+table.WriteTargetFileSizeBytesKey {
					t.Errorf("%s %q: err = %v, want a config error naming the key", key, v, err)
				}
			}
		}
	})
}

func TestSpecRoundTripsThroughJSON(t *testing.T) {
	// DoFn fields travel as JSON: every Spec field must survive.
	in := Spec{Table: "db.t", CatalogName: "c", CatalogProps: map[string]string{"type": "sql"}, SinkID: "s",
		PartitionFields: []string{"day(ts)"}, SortFields: []string{"id"}, TableProps: map[string]string{"a": "1"},
		WriteProps: map[string]string{"b": "2"}, SnapshotProps: map[string]string{"c": "3"}, TableCacheRefreshSeconds: 5,
		Keep: []string{"a", "b.c"}, Hash: true, TargetFileSizeBytes: 1 << 20, MergeOnRead: true, Upsert: true,
		ChangeTypeColumn: "op", ChangeTypeMap: map[string]string{"c": "INSERT"},
		SequenceNumberColumn: "src.lsn", EqualityColumns: []string{"id"}, Only: "after", BeforeField: "before"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Spec
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", in) != fmt.Sprintf("%+v", out) {
		t.Errorf("round trip\n got %+v\nwant %+v", out, in)
	}
}

// TestDirectWriteByteLimit: bundles within direct_write_byte_limit are written by
// the router itself (no shuffle), a larger bundle goes through the partition shuffle,
// and every row is written once.
func TestDirectWriteByteLimit(t *testing.T) {
	const regions = 4
	rows := regionRows(400, regions)
	small := [][]row.Row{rows[0:10], rows[10:20], rows[20:30]}
	large := rows[30:400]
	lc := icebergtest.NewLocalCatalog(t)
	createRegionTable(t, lc)
	spec := testSpec(t, lc, "db.t")
	spec.DirectLimit = 2000 // bytes: 10 rows fit, 370 do not

	// Small bundles only: no packet reaches the shuffle.
	files, dead := bundleFiles(t, spec, small)
	if len(dead) != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
	var direct int64
	for _, f := range files["db.t"] {
		direct += f.Rows
	}
	if direct != 30 || len(files["db.t"]) != 3*regions {
		t.Errorf("small bundles: %d files with %d rows, want %d files (one writer per bundle and partition) with 30 rows",
			len(files["db.t"]), direct, 3*regions)
	}

	// A large bundle with the small ones: it is shuffled, so its rows arrive in one
	// file per partition written by hashWriteFn; the small ones stay direct.
	files, dead = bundleFiles(t, spec, append(slices.Clone(small), large))
	if len(dead) != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
	var total int64
	for _, f := range files["db.t"] {
		total += f.Rows
	}
	if total != 400 || len(files["db.t"]) != 3*regions+regions {
		t.Errorf("mixed bundles: %d files with %d rows, want %d files with 400 rows", len(files["db.t"]), total, 4*regions)
	}
}

// TestAutoSharding: with auto_sharding a partition's packets of one bundle go to
// successive shards, so a busy partition gets several writers (files) and a quiet
// one a single writer.
func TestAutoSharding(t *testing.T) {
	defer func(n int) { packetBytes = n }(packetBytes)
	packetBytes = 200 // a few rows per packet
	lc := icebergtest.NewLocalCatalog(t)
	createRegionTable(t, lc)
	busy := regionRows(300, 1)     // region r0 only
	quiet := regionRows(4, 4)[1:2] // one row of region r1
	for _, auto := range []bool{false, true} {
		spec := testSpec(t, lc, "db.t")
		spec.Hash, spec.AutoShard = true, auto
		files, dead := bundleFiles(t, spec, [][]row.Row{append(slices.Clone(busy), quiet...)})
		if len(dead) != 0 {
			t.Fatalf("dead letters: %+v", dead)
		}
		var total int64
		for _, f := range files["db.t"] {
			total += f.Rows
		}
		if total != 301 {
			t.Errorf("auto=%v: %d rows written, want 301", auto, total)
		}
		if !auto && len(files["db.t"]) != 2 {
			t.Errorf("without auto sharding: %d files, want 2 (one per partition)", len(files["db.t"]))
		}
		if auto && (len(files["db.t"]) < 4) {
			t.Errorf("with auto sharding: %d files, want the busy partition split over several writers", len(files["db.t"]))
		}
	}
}

// TestHashPackerLargeBundles: bundles larger than a packer chunk are packed on the
// packer's goroutine; every row still reaches its partition once, bad rows anywhere
// in a bundle are dead letters, and each partition gets one writer (hash), several
// (auto_sharding with small packets) or one per bundle that stays direct.
func TestHashPackerLargeBundles(t *testing.T) {
	defer func(n int) { packetBytes = n }(packetBytes)
	packetBytes = 2 << 10 // a few packets per partition and bundle
	const (
		regions = 4
		per     = 3*packChunkRows + 20 // several chunks and a partial one
		bundles = 3
	)
	bad := row.New([]string{"id", "region", "name"}, []any{"not-a-long", "r0", "x"})
	rows := regionRows(per*bundles, regions)
	var split [][]row.Row
	for i := range bundles {
		b := slices.Clone(rows[i*per : (i+1)*per])
		b = slices.Insert(b, packChunkRows+5, bad) // inside the second chunk
		split = append(split, append(b, bad))      // and in the last, partial one
	}
	for _, tc := range []struct {
		name      string
		set       func(*Spec)
		files     func(n int) bool
		wantFiles string
	}{
		{"hash", func(s *Spec) { s.Hash = true }, func(n int) bool { return n == regions }, "one per partition"},
		{"auto_sharding", func(s *Spec) { s.Hash, s.AutoShard = true, true }, func(n int) bool { return n > regions }, "more than one per partition"},
		{"direct", func(s *Spec) { s.DirectLimit = 1 << 30 }, func(n int) bool { return n == bundles*regions }, "one per bundle and partition"},
		{"direct_overflow", func(s *Spec) { s.DirectLimit = 10 << 10 }, func(n int) bool { return n == regions }, "one per partition (every bundle overflows into the shuffle)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			createRegionTable(t, lc)
			spec := testSpec(t, lc, "db.t")
			tc.set(&spec)
			files, dead := bundleFiles(t, spec, split)
			if len(dead) != 2*bundles {
				t.Errorf("%d dead letters, want %d", len(dead), 2*bundles)
			}
			if !tc.files(len(files["db.t"])) {
				t.Errorf("%d files, want %s", len(files["db.t"]), tc.wantFiles)
			}
			tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "t"})
			if err != nil {
				t.Fatal(err)
			}
			dfs, err := datafile.Decode(tbl.Metadata(), files["db.t"])
			if err != nil {
				t.Fatal(err)
			}
			perRegion := map[string]int64{}
			for _, f := range dfs {
				perRegion[fmt.Sprint(f.Partition())] += f.Count()
			}
			if len(perRegion) != regions {
				t.Errorf("rows in %d partitions, want %d: %v", len(perRegion), regions, perRegion)
			}
			for p, n := range perRegion {
				if n != int64(len(rows)/regions) {
					t.Errorf("partition %s holds %d rows, want %d", p, n, len(rows)/regions)
				}
			}
		})
	}
}
