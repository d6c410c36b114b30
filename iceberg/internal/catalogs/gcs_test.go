package catalogs

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// fakeGCS starts an in-process fake-gcs-server with bucket and returns the
// FileIO properties that reach it.
func fakeGCS(t *testing.T, bucket string) map[string]string {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", Host: "127.0.0.1", Port: 0, NoListener: false,
	})
	if err != nil {
		t.Fatalf("fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return map[string]string{
		"gcs.endpoint":   srv.URL() + "/storage/v1/",
		"gcs.no-auth":    "true",
		"gcs.usejsonapi": "true",
	}
}

func TestGCSWarehouseRoundTrip(t *testing.T) {
	ctx := context.Background()
	props := fakeGCS(t, "lake-bucket")
	props["type"] = "sql"
	props["uri"] = "file:" + filepath.Join(t.TempDir(), "catalog.db")
	props["warehouse"] = "gs://lake-bucket/wh"

	cat, err := Get(ctx, "gcs", props)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	created := createTable(t, cat, "db", "orders", ibg.Properties{"format-version": "3"})
	if loc := created.Location(); !strings.HasPrefix(loc, "gs://lake-bucket/wh/") {
		t.Fatalf("table location %q is not in the bucket", loc)
	}

	tbl, err := LoadTable(ctx, "gcs", props, "db.orders", time.Minute)
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	tbl = appendRows(t, tbl, 10, 20, 30)

	loaded, err := LoadTable(ctx, "gcs", props, "db.orders", 0)
	if err != nil {
		t.Fatalf("LoadTable after commit: %v", err)
	}
	if got := scanIDs(t, loaded); !slices.Equal(sorted(got), []int64{10, 20, 30}) {
		t.Fatalf("scan = %v, want [10 20 30]", got)
	}

	// Every table of the bucket shares one FileIO, also after a commit.
	f1, err := loaded.FS(ctx)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	f2, err := tbl.FS(ctx)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	f3, err := FS(ctx, loaded)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	if f1 != f2 || f1 != f3 {
		t.Fatal("tables of one bucket and configuration got different FileIOs")
	}

	// The cached FileIO survives the cancellation of the context it was built on.
	cctx, cancel := context.WithCancel(ctx)
	other := cloneProps(props)
	other["gcs.extra"] = "x" // a new FileIO configuration
	fio, err := SharedFS(cctx, loaded.MetadataLocation(), other)
	if err != nil {
		t.Fatalf("SharedFS: %v", err)
	}
	cancel()
	if f, err := fio.Open(loaded.MetadataLocation()); err != nil {
		t.Fatalf("Open after ctx cancel: %v", err)
	} else {
		_ = f.Close()
	}
	if fio == f1 {
		t.Fatal("different FileIO properties must not share a FileIO")
	}
}
