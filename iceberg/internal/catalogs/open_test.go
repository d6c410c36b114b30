package catalogs

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func TestOpenConfigErrors(t *testing.T) {
	tests := []struct {
		name, catName string
		props         map[string]string
		key           string
		mention       string
	}{
		{"empty name", "", map[string]string{"type": "sql", "uri": "file:x"}, "catalog_name", "empty"},
		{"blank name", "  ", map[string]string{"type": "sql"}, "catalog_name", "empty"},
		{"missing type", "c", map[string]string{"uri": "http://x"}, "catalog_properties.type", "sql, rest, hadoop, glue, hive"},
		{"nil props", "c", nil, "catalog_properties.type", "supported"},
		{"unknown type", "c", map[string]string{"type": "nessie"}, "catalog_properties.type", "sql, rest, hadoop, glue, hive"},
		{"sql without uri", "c", map[string]string{"type": "sql"}, "catalog_properties.uri", "DSN"},
		{"bad sql driver", "c", map[string]string{"type": "sql", "uri": "x", "sql.driver": "oracle"}, "catalog_properties.sql.driver", "postgres"},
		{"hadoop without warehouse", "c", map[string]string{"type": "hadoop"}, "catalog_properties.warehouse", "warehouse"},
		{"hive without uri", "c", map[string]string{"type": "hive"}, "catalog_properties.uri", "metastore"},
		{"glue half credentials", "c", map[string]string{"type": "glue", "glue.access-key-id": "AKIA"}, "catalog_properties.glue.access-key-id", "together"},
		{"sqlite folder under a file", "c", map[string]string{"type": "sql", "uri": "file:" + filepath.Join(underFile(t), "catalog.db")}, "catalog_properties.uri", "cannot create the folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), tt.catName, tt.props)
			var ce *config.ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Fatalf("err = %v, want ConfigError with key %s", err, tt.key)
			}
			if !errors.Is(err, config.ErrInvalidConfig) {
				t.Fatalf("err does not wrap ErrInvalidConfig: %v", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("err %q does not mention %q", err, tt.mention)
			}
			if n := strings.Count(err.Error(), "iceberg:"); n != 1 || !strings.HasPrefix(err.Error(), "iceberg: ") {
				t.Fatalf("err %q has the prefix %q %d times, want once, in front", err, "iceberg:", n)
			}
		})
	}
}

func TestHadoopLocal(t *testing.T) {
	ctx := context.Background()
	props := map[string]string{"type": "hadoop", "warehouse": "file://" + t.TempDir()}
	cat, err := Get(ctx, "hd", props)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if cat.CatalogType() != catalog.Hadoop {
		t.Fatalf("type = %v", cat.CatalogType())
	}
	createTable(t, cat, "db", "t", ibg.Properties{"format-version": "2"})
	tbl, err := LoadTable(ctx, "hd", props, "db.t", 0)
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	tbl = appendRows(t, tbl, 1, 2)
	if got := scanIDs(t, tbl); !slices.Equal(sorted(got), []int64{1, 2}) {
		t.Fatalf("scan = %v", got)
	}
	if _, err := LoadTable(ctx, "hd", props, "db.none", 0); !errors.Is(err, config.ErrTableNotFound) {
		t.Fatalf("missing table err = %v", err)
	}
}

// closedPort returns a 127.0.0.1 port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return strconv.Itoa(port)
}

// TestUnreachableCatalogsKeepSecrets opens (and loads a table from) every
// catalog type with secret-bearing properties and a bad endpoint: the error
// names the catalog and never contains a secret.
func TestUnreachableCatalogsKeepSecrets(t *testing.T) {
	const (
		pw     = "pg-pass-5ecret"
		cred   = "client-id:cl1ent-5ecret"
		token  = "t0ken-5ecret"
		awsKey = "aws-5ecret-access-key"
		hdr    = "Bearer hdr-5ecret"
	)
	secrets := []string{pw, "cl1ent-5ecret", token, awsKey, "hdr-5ecret"}
	fail500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"boom","type":"ServerError","code":500}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(fail500.Close)
	port := closedPort(t)
	// A folder under a regular file cannot be made, not even by root (ENOTDIR): the
	// SQLite catalog creates a missing folder of its database file.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		props map[string]string
	}{
		{"sql postgres closed port", map[string]string{"type": "sql", "sql.driver": "postgres",
			"uri": "postgres://user:" + pw + "@127.0.0.1:" + port + "/db?connect_timeout=2", "password": pw}},
		{"sql postgres kv dsn", map[string]string{"type": "sql", "sql.driver": "pgx",
			"uri": "host=127.0.0.1 port=" + port + " user=u password=" + pw + " connect_timeout=2"}},
		{"sql sqlite unwritable", map[string]string{"type": "sql", "uri": "file:" + notDir + "/x/c.db", "token": token}},
		{"rest 500 credential", map[string]string{"type": "rest", "uri": fail500.URL, "credential": cred, "header.Authorization": hdr}},
		{"rest 500 token", map[string]string{"type": "rest", "uri": fail500.URL, "token": token}},
		{"rest closed port", map[string]string{"type": "rest", "uri": "http://127.0.0.1:" + port, "token": token, "credential": cred}},
		{"hive closed port", map[string]string{"type": "hive", "uri": "thrift://127.0.0.1:" + port, "password": pw}},
		{"glue closed port", map[string]string{"type": "glue", "glue.endpoint": "http://127.0.0.1:" + port,
			"glue.region": "us-east-1", "glue.access-key-id": "AKIAEXAMPLE", "glue.secret-access-key": awsKey,
			"glue.max-retries": "1"}},
		{"hadoop bad scheme", map[string]string{"type": "hadoop", "warehouse": "gs://b/w", "gcs.oauth2.token": token}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			name := "cat-" + strings.ReplaceAll(tt.name, " ", "-")
			_, err := LoadTable(ctx, name, tt.props, "db.t", 0)
			if err == nil {
				t.Fatal("LoadTable succeeded against a bad endpoint")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			for _, s := range secrets {
				if strings.Contains(msg, s) {
					t.Fatalf("error leaks secret %q: %s", s, msg)
				}
			}
			if !strings.Contains(msg, name) || !strings.Contains(msg, "type "+tt.props["type"]) {
				t.Fatalf("error does not name the catalog and type: %s", msg)
			}
			if errors.Is(err, config.ErrTableNotFound) {
				t.Fatalf("an unreachable catalog is not a missing table: %s", msg)
			}
		})
	}
}

// TestHomeConfigIgnored writes a bogus ~/.iceberg-go.yaml that would inject a
// credential and a warehouse into catalog "lake" (what catalog.Load does),
// and shows Open does not use it. iceberg-go reads the file once at process
// start, so the check runs in a child test process whose HOME and
// GOICEBERG_HOME point at the file, and once in-process with t.Setenv.
func TestHomeConfigIgnored(t *testing.T) {
	if os.Getenv("ICEBEAM_HOMECFG_CHILD") != "1" {
		home := t.TempDir()
		yaml := "default-catalog: lake\ncatalog:\n  lake:\n    type: rest\n    uri: http://127.0.0.1:1\n" +
			"    credential: bogus-id:bogus-secret\n    warehouse: gs://bogus/warehouse\n"
		if err := os.WriteFile(filepath.Join(home, ".iceberg-go.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", home)
		t.Setenv("GOICEBERG_HOME", home)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHomeConfigIgnored$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ICEBEAM_HOMECFG_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("child with bogus home config failed: %v\n%s", err, out)
		}
	}
	// In the child the bogus file is iceberg-go's EnvConfig; in the parent it is on disk.
	rs := newRESTServer(t)
	props := map[string]string{"type": "rest", "uri": rs.URL}
	openForTest(t, "lake", props)
	for _, r := range rs.all() {
		if r.URL.Path == "/v1/oauth/tokens" || r.Header.Get("Authorization") != "" {
			t.Fatalf("the home config's credential was used: %s %v", r.URL.Path, r.Header)
		}
		if w := r.URL.Query().Get("warehouse"); w != "" {
			t.Fatalf("the home config's warehouse was used: %q", w)
		}
	}
	sqlProps := sqliteProps(t)
	if cat := openForTest(t, "lake", sqlProps); cat.CatalogType() != catalog.SQL {
		t.Fatalf("home config changed the catalog type to %v", cat.CatalogType())
	}
}

// TestSupportedTypesMatchConfig: the types config.Validate accepts are exactly the types
// Open has a case for, so a type Validate passes never fails Open as unknown.
func TestSupportedTypesMatchConfig(t *testing.T) {
	want := []string{TypeSQL, TypeREST, TypeHadoop, TypeGlue, TypeHive}
	if !slices.Equal(config.CatalogTypes, want) {
		t.Fatalf("config.CatalogTypes = %v, want Open's types %v", config.CatalogTypes, want)
	}
	for _, typ := range want {
		_, err := Open(context.Background(), "c", map[string]string{"type": typ, "glue.access-key-id": "AKIA"})
		if err != nil && strings.Contains(err.Error(), "unknown catalog type") {
			t.Errorf("Open(type %s): %v", typ, err)
		}
	}
}

// underFile returns a path inside a regular file of t.TempDir(): no folder can be
// made there.
func underFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(file, "sub")
}
