package catalogs

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func TestRedact(t *testing.T) {
	in := map[string]string{
		"type":                       "rest",
		"uri":                        "postgres://user:pw-123@db.example:5432/cat?sslmode=require",
		"credential":                 "id:sec",
		"token":                      "tok",
		"header.Authorization":       "Bearer abc",
		"header.x-goog-user-project": "proj",
		"s3.secret-access-key":       "s3sec",
		"gcs.oauth2.token":           "ya29",
		"glue.session-token":         "sess",
		"private-key":                "pk",
		"key":                        "k",
		"warehouse":                  "gs://bucket/wh",
		"dsn":                        "host=h user=u password=p4ss dbname=d",
		"empty-password":             "",
	}
	orig := maps.Clone(in)
	got := Redact(in)
	if !maps.Equal(in, orig) {
		t.Fatal("Redact modified its input")
	}
	want := map[string]string{
		"type":                       "rest",
		"uri":                        "postgres://user:xxxxx@db.example:5432/cat?sslmode=require",
		"credential":                 Redacted,
		"token":                      Redacted,
		"header.Authorization":       Redacted,
		"header.x-goog-user-project": "proj",
		"s3.secret-access-key":       Redacted,
		"gcs.oauth2.token":           Redacted,
		"glue.session-token":         Redacted,
		"private-key":                Redacted,
		"key":                        Redacted,
		"warehouse":                  "gs://bucket/wh",
		"dsn":                        "host=h user=u password=xxxxx dbname=d",
		"empty-password":             "",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("Redact[%q] = %q, want %q", k, got[k], w)
		}
	}
	if Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
}

func TestRedactURI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://h:8181/api", "http://h:8181/api"},
		{"postgres://u:p@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"https://h/x?token=abc&a=1", "https://h/x?token=xxxxx&a=1"},
		{"mysql://u:p%zz@h/db", "mysql://u:xxxxx@h/db"},
		{"dial postgres://u:pw@h/db failed: see postgres://v:pw2@g", "dial postgres://u:xxxxx@h/db failed: see postgres://v:xxxxx@g"},
		{"user=u password='a b' host=h", "user=u password=xxxxx host=h"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := RedactURI(tt.in); got != tt.want {
				t.Fatalf("RedactURI(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWrapErrScrubsAndWraps(t *testing.T) {
	props := map[string]string{"credential": "cid:topsecret", "uri": "postgres://u:pgpw1@h/db"}
	cause := errors.New("server said topsecret and pgpw1 and cid:topsecret")
	err := wrapErr(props, "iceberg: open catalog x", cause, config.ErrTableNotFound)
	for _, s := range []string{"topsecret", "pgpw1"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("message leaks %q: %s", s, err)
		}
	}
	if !errors.Is(err, cause) || !errors.Is(err, config.ErrTableNotFound) {
		t.Fatalf("wrapErr lost the chain: %v", err)
	}
}

func TestParseIdent(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"db.tbl", []string{"db", "tbl"}, false},
		{"a.b.tbl", []string{"a", "b", "tbl"}, false},
		{"tbl", nil, true},
		{"", nil, true},
		{"db.", nil, true},
		{".tbl", nil, true},
		{"a..tbl", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseIdent(tt.in)
			if tt.err {
				var ce *config.ConfigError
				if !errors.As(err, &ce) || ce.Key != "table" {
					t.Fatalf("ParseIdent(%q) err = %v, want ConfigError on table", tt.in, err)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("ParseIdent(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
}
