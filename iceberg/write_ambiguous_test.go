package iceberg_test

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestMergeOnReadAmbiguousSequence: two different after-images of one key with the
// same (last) sequence number in one window are not applied: every change of the key
// at that sequence number goes to the dead letter output naming the key and the
// sequence number, the key keeps its committed row, and the other keys apply.
func TestMergeOnReadAmbiguousSequence(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "amb", 10, 3)
	cfg := iceberg.WriteConfig{Table: "db.amb", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", SinkID: "amb"}
	rows := []iceberg.Row{
		cdcRow(iceberg.ChangeUpdateBefore, 2, "city-2", "CA", 5),
		cdcRow(iceberg.ChangeUpdateAfter, 2, "city-2", "NY", 5),
		cdcRow(iceberg.ChangeUpdateAfter, 2, "city-2", "TX", 5),
		cdcRow(iceberg.ChangeUpdateBefore, 3, "city-3", "CA", 5),
		cdcRow(iceberg.ChangeUpdateAfter, 3, "city-3", "WA", 5),
		cdcRow(iceberg.ChangeUpdateAfter, 3, "city-3", "WA", 5), // a redelivery: not ambiguous
	}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 3 {
		t.Fatalf("%d dead letters, want the 3 changes of key 2: %+v", len(dead), dead)
	}
	for _, d := range dead {
		if !strings.Contains(d.Reason, "key (id=2) at sequence number 5") || !strings.Contains(d.Reason, "ambiguous") ||
			!strings.Contains(d.Row, "id: 2,") || d.Table != "db.amb" {
			t.Errorf("dead letter %+v", d)
		}
	}
	if len(snaps) != 1 || snaps[0].RowsAdded != 1 {
		t.Fatalf("snapshots %+v, want one adding key 3's row", snaps)
	}
	got, _ := cityContents(t, lc, "amb")
	if len(got) != 10 || got[2] != "city-2|CA" || got[3] != "city-3|WA" {
		t.Fatalf("%d rows; 2=%q 3=%q", len(got), got[2], got[3])
	}
}
