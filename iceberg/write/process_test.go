package write

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestAppendSeparateWorkerProcess runs appends (per-bundle and hash distribution) on
// prism with workers in a separate process: everything the DoFns need must travel in
// their serialized configuration and the catalog, nothing through this process.
func TestAppendSeparateWorkerProcess(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.ProcessEnvironment(t)

	const n = 20_000
	p, s := beam.NewPipelineWithRoot()
	seeds := beam.CreateList(s, []int{0, 1, 2, 3})
	rows := beam.ParDo(s, &genRowsFn{Per: n / 4}, seeds)
	bad := beam.CreateList(s, []row.Row{row.New([]string{"id", "s1"}, []any{"not-a-long", "x"})})
	in := beam.Flatten(s, rows, bad)
	for _, hash := range []bool{false, true} {
		spec := testSpec(t, lc, fmt.Sprintf("db.proc_%v", hash))
		spec.SinkID = fmt.Sprintf("proc-%v", hash)
		spec.PartitionFields = []string{"c"}
		spec.Keep = []string{"id", "a", "c", "s1", "ts"}
		spec.Hash = hash
		snaps, dead, err := Append(s, spec, in)
		if err != nil {
			t.Fatal(err)
		}
		passert.Count(s, snaps, "snapshots", 1)
		passert.Count(s, dead, "dead letters", 1)
	}
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	for _, hash := range []bool{false, true} {
		ident := table.Identifier{"db", fmt.Sprintf("proc_%v", hash)}
		if got := writetest.CountRows(t, lc.Catalog, ident); got != n {
			t.Errorf("%s: rows = %d, want %d", ident, got, n)
		}
		tbl, err := lc.Catalog.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if err := icebergtest.CheckTable(ctx, tbl); err != nil {
			t.Error(err)
		}
		if got := writetest.ColumnNames(tbl); got != "id,a,c,s1,ts" {
			t.Errorf("%s: columns %s", ident, got)
		}
		tok, found, err := commit.FindToken(tbl.Metadata(), table.MainBranch, fmt.Sprintf("proc-%v", hash))
		if err != nil || !found || tok.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			t.Errorf("%s: token %+v, %v, %v", ident, tok, found, err)
		}
		files := dataFiles(t, lc, ident)
		if hash && len(files) != 13 { // one file per partition c = i % 13
			t.Errorf("%s: %d data files with hash distribution, want 13", ident, len(files))
		}
	}
}
