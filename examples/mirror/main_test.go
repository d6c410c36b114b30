package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestMain(m *testing.M) { runnertest.Main(m) }

func newTarget(t *testing.T) target {
	t.Helper()
	lc, err := icebergtest.NewLocalCatalogAt(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return target{name: lc.Name, props: lc.Props, cat: lc.Catalog}
}

func load(t *testing.T, tg target, name string) *table.Table {
	t.Helper()
	tbl, err := tg.cat.LoadTable(context.Background(), catalog.ToIdentifier(name))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// requireEqual checks that dst holds exactly the rows of src (as of snapshot srcSnap,
// or its current snapshot when srcSnap is 0).
func requireEqual(t *testing.T, tg target, src, dst string, srcSnap int64) {
	t.Helper()
	st := load(t, tg, src)
	var want arrow.Table
	if srcSnap == 0 {
		want = icebergtest.ReadAll(t, st, nil, columns...)
	} else {
		var err error
		want, err = st.Scan(table.WithSnapshotID(srcSnap), table.WithSelectedFields(columns...)).
			ToArrowTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
	}
	defer want.Release()
	got := icebergtest.ReadAll(t, load(t, tg, dst), nil, columns...)
	defer got.Release()
	if want.NumRows() == 0 {
		t.Fatal("source has no rows")
	}
	icebergtest.EqualRows(t, want, got)
}

// TestMirror runs the example and checks that the mirror equals the source and is a
// valid table.
func TestMirror(t *testing.T) {
	tg := newTarget(t)
	var out bytes.Buffer
	if err := run(context.Background(), &out, tg); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, s := range []string{"source shop.orders_src: 11 rows", "mirror shop.orders_mirror: 11 rows", "equal: true"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, out.String())
		}
	}
	requireEqual(t, tg, sourceTable, mirrorTable, 0)
	mt := load(t, tg, mirrorTable)
	icebergtest.RequireValid(t, mt)
	var names []string
	for _, f := range mt.Schema().Fields() {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != strings.Join(columns, ",") {
		t.Errorf("mirror columns = %v, want %v (no control columns)", names, columns)
	}
	if ids := mt.Schema().IdentifierFieldIDs; len(ids) != 1 {
		t.Errorf("mirror identifier fields = %v, want the id column", ids)
	}
}

// TestMirrorIncremental mirrors the source up to its previous snapshot, then only the
// last snapshot's changes (from_snapshot = the previous snapshot) into the same mirror,
// which must end equal to the source.
func TestMirrorIncremental(t *testing.T) {
	ctx := context.Background()
	tg := newTarget(t)
	if err := buildSource(ctx, tg); err != nil {
		t.Fatal(err)
	}
	cur := load(t, tg, sourceTable).CurrentSnapshot()
	if cur == nil || cur.ParentSnapshotID == nil {
		t.Fatalf("source has no previous snapshot: %+v", cur)
	}
	prev := *cur.ParentSnapshotID
	const dst = "shop.orders_mirror_inc"

	if err := mirror(ctx, tg, sourceTable, dst, nil, &prev); err != nil {
		t.Fatal(err)
	}
	requireEqual(t, tg, sourceTable, dst, prev)
	before := load(t, tg, dst).CurrentSnapshot().SnapshotID

	if err := mirror(ctx, tg, sourceTable, dst, &prev, nil); err != nil {
		t.Fatal(err)
	}
	mt := load(t, tg, dst)
	if mt.CurrentSnapshot().SnapshotID == before {
		t.Fatal("the second mirror run committed nothing")
	}
	requireEqual(t, tg, sourceTable, dst, 0)
	icebergtest.RequireValid(t, mt)
}
