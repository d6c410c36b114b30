package icebergtest

import (
	"path/filepath"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	// Links gs:// and gcs:// FileIO, as a user's program does.
	_ "github.com/icebeam/icebeam/iceberg/storage/gcs"
)

// FakeGCS is an in-process fake Google Cloud Storage server listening on
// 127.0.0.1 with one bucket.
type FakeGCS struct {
	// Server is the running fake-gcs-server.
	Server *fakestorage.Server
	// Bucket is the name of the bucket created at start.
	Bucket string
}

// NewFakeGCS starts a fake GCS HTTP server on 127.0.0.1 with an in-memory
// backend and creates bucket in it. The server stops in t.Cleanup.
func NewFakeGCS(t testing.TB, bucket string) *FakeGCS {
	t.Helper()

	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
	})
	if err != nil {
		t.Fatalf("icebergtest: start fake GCS: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})

	return &FakeGCS{Server: srv, Bucket: bucket}
}

// Endpoint returns the JSON API endpoint, http://host:port/storage/v1/.
func (g *FakeGCS) Endpoint() string {
	return g.Server.URL() + "/storage/v1/"
}

// Props returns the FileIO properties that reach the fake server:
// gcs.endpoint, gcs.no-auth=true and gcs.usejsonapi=true (without the last,
// reads through the XML API return 404).
func (g *FakeGCS) Props() map[string]string {
	return map[string]string{
		iceio.GCSEndpoint:   g.Endpoint(),
		iceio.GCSNoAuth:     "true",
		iceio.GCSUseJSONAPI: "true",
	}
}

// URL returns gs://bucket/path.
func (g *FakeGCS) URL(path string) string {
	return "gs://" + g.Bucket + "/" + path
}

// NewLocalCatalogGCS returns a SQL catalog (SQLite file in t.TempDir())
// whose warehouse is gs://<bucket>/warehouse on gcs, with gcs.Props() in
// its Props. The catalog is closed in t.Cleanup.
func NewLocalCatalogGCS(t testing.TB, gcs *FakeGCS) *LocalCatalog {
	t.Helper()

	c, err := openLocalCatalog(filepath.Join(t.TempDir(), "catalog.db"), gcs.URL("warehouse"), gcs.Props())
	if err != nil {
		t.Fatalf("icebergtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("icebergtest: close catalog: %v", err)
		}
	})

	return c
}
