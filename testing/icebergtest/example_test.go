package icebergtest_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// Example creates an embedded catalog and a table, appends rows through
// iceberg-go and reads back how many there are. Outside tests, use
// NewLocalCatalogAt and BuildRecords, which return errors instead of
// failing a test.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "icebergtest-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	lc, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer lc.Close()

	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
	)
	ident := catalog.ToIdentifier("shop.visits")
	if err := lc.Catalog.CreateNamespace(ctx, catalog.NamespaceFromIdent(ident), nil); err != nil {
		log.Fatal(err)
	}
	tbl, err := lc.Catalog.CreateTable(ctx, ident, sc, catalog.WithProperties(ibg.Properties{"format-version": "3"}))
	if err != nil {
		log.Fatal(err)
	}

	rec, err := icebergtest.BuildRecords(tbl.Schema(), [][]any{{int64(1), "Oslo"}, {int64(2), nil}, {int64(3), "Lima"}})
	if err != nil {
		log.Fatal(err)
	}
	batches := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) } // WriteRecords releases rec
	var files []ibg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, rec.Schema(), batches) {
		if err != nil {
			log.Fatal(err)
		}
		files = append(files, df)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(files...).Commit(ctx); err != nil {
		log.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	if err := icebergtest.CheckTable(ctx, tbl); err != nil {
		log.Fatal(err)
	}

	out, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Release()
	fmt.Println("rows:", out.NumRows())
	// Output: rows: 3
}
