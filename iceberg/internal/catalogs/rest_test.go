package catalogs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// restServer is a minimal REST catalog: /v1/config answers, every table is
// missing. It records the headers and query of each request.
type restServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newRESTServer(t *testing.T) *restServer {
	t.Helper()
	rs := &restServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.requests = append(rs.requests, r.Clone(context.Background()))
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/config":
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case strings.Contains(r.URL.Path, "/tables/"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"Table does not exist","type":"NoSuchTableException","code":404}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"not found","type":"NotFoundException","code":404}}`))
		}
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *restServer) all() []*http.Request {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]*http.Request(nil), rs.requests...)
}

func TestRESTHeadersAndToken(t *testing.T) {
	rs := newRESTServer(t)
	props := map[string]string{
		"type": "rest", "uri": rs.URL, "token": "tok-abc123",
		"header.x-goog-user-project": "my-project", "warehouse": "gs://bkt/wh",
	}
	cat := openForTest(t, "restcat", props)
	if cat.CatalogType() != catalog.REST {
		t.Fatalf("type = %v", cat.CatalogType())
	}
	_, err := LoadTable(context.Background(), "restcat", props, "db.nope", 0)
	if !errors.Is(err, config.ErrTableNotFound) {
		t.Fatalf("LoadTable err = %v, want ErrTableNotFound", err)
	}
	if strings.Contains(err.Error(), "tok-abc123") {
		t.Fatalf("error leaks the token: %v", err)
	}
	reqs := rs.all()
	if len(reqs) < 2 {
		t.Fatalf("server saw %d requests", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("x-goog-user-project"); got != "my-project" {
			t.Errorf("%s: x-goog-user-project = %q", r.URL.Path, got)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer tok-abc123" {
			t.Errorf("%s: Authorization = %q", r.URL.Path, got)
		}
	}
	if got := reqs[0].URL.Query().Get("warehouse"); got != "gs://bkt/wh" {
		t.Errorf("config request warehouse = %q", got)
	}
}

func TestRESTGoogleADC(t *testing.T) {
	var tokenCalls int
	var mu sync.Mutex
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		tokenCalls++
		mu.Unlock()
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != "refresh-xyz" {
			http.Error(w, "bad grant", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token": "adc-token-1", "token_type": "Bearer", "expires_in": 3600,
		})
	}))
	t.Cleanup(tokenSrv.Close)
	adc := filepath.Join(t.TempDir(), "adc.json")
	body, _ := json.Marshal(map[string]string{
		"type": "authorized_user", "client_id": "cid", "client_secret": "csecret",
		"refresh_token": "refresh-xyz", "token_uri": tokenSrv.URL,
	})
	if err := os.WriteFile(adc, body, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)

	rs := newRESTServer(t)
	props := map[string]string{"type": "rest", "uri": rs.URL, "rest.auth.type": "google",
		"header.x-goog-user-project": "proj"}
	cat := openForTest(t, "biglake", props)
	if _, err := cat.LoadTable(context.Background(), []string{"db", "t"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("LoadTable err = %v", err)
	}
	for _, r := range rs.all() {
		if got := r.Header.Get("Authorization"); got != "Bearer adc-token-1" {
			t.Errorf("%s: Authorization = %q, want the ADC token", r.URL.Path, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if tokenCalls != 1 {
		t.Errorf("token endpoint called %d times, want 1 (token cached)", tokenCalls)
	}
}

func TestRESTAuthConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		key   string
	}{
		{"missing uri", map[string]string{"type": "rest"}, "catalog_properties.uri"},
		{"bad uri", map[string]string{"type": "rest", "uri": "ftp://x"}, "catalog_properties.uri"},
		{"unknown auth", map[string]string{"type": "rest", "uri": "http://127.0.0.1:1", "rest.auth.type": "kerberos"}, "catalog_properties.rest.auth.type"},
		{"google with token", map[string]string{"type": "rest", "uri": "http://127.0.0.1:1", "rest.auth.type": "google", "token": "t0ken-x"}, "catalog_properties.rest.auth.type"},
		{"bad oauth uri", map[string]string{"type": "rest", "uri": "http://127.0.0.1:1", "oauth2-server-uri": "::"}, "catalog_properties.oauth2-server-uri"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), "c", tt.props)
			var ce *config.ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Fatalf("err = %v, want ConfigError key %s", err, tt.key)
			}
			if !errors.Is(err, config.ErrInvalidConfig) {
				t.Fatalf("err does not wrap ErrInvalidConfig: %v", err)
			}
		})
	}
}
