package write

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func testSpec(t *testing.T, lc *icebergtest.LocalCatalog, tpl string) Spec {
	t.Helper()
	return Spec{Table: tpl, CatalogName: lc.Name, CatalogProps: lc.Props, SinkID: uuid.NewString()}
}

// runAppend runs Append over rows and returns the snapshot infos and dead letters.
func runAppend(t *testing.T, spec Spec, rows []row.Row) ([]commit.SnapshotInfo, []DeadLetter) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, rows)
	snaps, dead, err := Append(s, spec, in)
	if err != nil {
		t.Fatal(err)
	}
	var gotSnaps []commit.SnapshotInfo
	var gotDead []DeadLetter
	collect(s, snaps, &gotSnaps)
	collect(s, dead, &gotDead)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	return gotSnaps, gotDead
}

func TestAppendPipeline(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	spec := testSpec(t, lc, "db.events_{region}")
	spec.PartitionFields = []string{"day(ts)"}
	names := []string{"id", "region", "ts", "name"}
	var rows []row.Row
	regions := []any{"eu", "us", "ap-south"}
	for i := range 300 {
		rows = append(rows, row.New(names, []any{int64(i), regions[i%3], ibgTs(int64(i) * 3_600_000_000), "n"}))
	}
	// Bad rows: no destination (null region), wrong type for an existing column.
	rows = append(rows,
		row.New(names, []any{int64(1000), nil, ibgTs(0), "x"}),
		row.New(names, []any{"not-a-long", "eu", ibgTs(0), "x"}),
	)
	snaps, dead := runAppend(t, spec, rows)
	if len(snaps) != 3 {
		t.Fatalf("snapshots = %+v, want 3", snaps)
	}
	var total int64
	for _, si := range snaps {
		total += si.RowsAdded
		if si.Skipped || si.Operation != "append" || si.SinkID != spec.SinkID {
			t.Errorf("snapshot info %+v", si)
		}
	}
	if total+int64(len(dead)) != int64(len(rows)) {
		t.Errorf("rows added %d + dead letters %d != %d input rows", total, len(dead), len(rows))
	}
	if len(dead) != 2 {
		t.Fatalf("dead letters = %+v, want 2", dead)
	}
	for _, d := range dead {
		if !strings.Contains(d.Reason, "no destination") && !strings.Contains(d.Reason, `"id"`) {
			t.Errorf("dead letter reason %q names neither the destination nor the column", d.Reason)
		}
	}
	for _, tn := range []string{"db.events_eu", "db.events_us", "db.events_ap_south"} {
		tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier(strings.Split(tn, ".")))
		if err != nil {
			t.Fatal(err)
		}
		if err := icebergtest.CheckTable(ctx, tbl); err != nil {
			t.Errorf("%s: %v", tn, err)
		}
		if got := writetest.CountRows(t, lc.Catalog, tbl.Identifier()); got != 100 {
			t.Errorf("%s rows = %d, want 100", tn, got)
		}
		if tbl.Metadata().Version() != 3 {
			t.Errorf("%s format version %d", tn, tbl.Metadata().Version())
		}
	}

	t.Run("rerun with the same sink id is skipped", func(t *testing.T) {
		snaps, _ := runAppend(t, spec, rows)
		for _, si := range snaps {
			if !si.Skipped {
				t.Errorf("rerun committed: %+v", si)
			}
		}
		if got := writetest.CountRows(t, lc.Catalog, table.Identifier{"db", "events_eu"}); got != 100 {
			t.Errorf("rows after rerun = %d, want 100", got)
		}
	})
}
