package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// TestLookupNotLinked: this test binary imports no catalog package, so every
// optional type is a ConfigError on catalog_properties.type that names the
// package to import; an unknown type lists the supported ones.
func TestLookupNotLinked(t *testing.T) {
	for typ, imp := range catalogImports {
		t.Run(typ, func(t *testing.T) {
			_, err := Lookup(typ)
			var ce *config.ConfigError
			if !errors.As(err, &ce) || ce.Key != "catalog_properties.type" {
				t.Fatalf("Lookup(%q) = %v, want ConfigError on catalog_properties.type", typ, err)
			}
			if !errors.Is(err, config.ErrUnsupported) || !errors.Is(err, config.ErrInvalidConfig) {
				t.Fatalf("Lookup(%q) = %v, want ErrUnsupported and ErrInvalidConfig", typ, err)
			}
			if !strings.Contains(err.Error(), `_ "`+imp+`"`) || !strings.Contains(err.Error(), ImportAll) {
				t.Fatalf("Lookup(%q) = %q, want the imports %s and %s", typ, err, imp, ImportAll)
			}
		})
	}
	if _, err := Lookup("nessie"); err == nil || !strings.Contains(err.Error(), "unknown catalog type") {
		t.Fatalf("Lookup(nessie) = %v, want unknown catalog type", err)
	}
}

// TestEveryOptionalTypeHasImport: each type config accepts is either
// registered by this package's importers (rest) or has a package to name.
func TestEveryOptionalTypeHasImport(t *testing.T) {
	for _, typ := range config.CatalogTypes {
		if _, ok := catalogImports[typ]; !ok && typ != "rest" {
			t.Errorf("catalog type %q has no import path in catalogImports", typ)
		}
	}
}

func TestRegisterLookupAndDuplicate(t *testing.T) {
	called := false
	open := func(context.Context, string, map[string]string) (catalog.Catalog, error) {
		called = true
		return nil, nil
	}
	Register("hive", open)
	t.Cleanup(func() { mu.Lock(); delete(openers, "hive"); mu.Unlock() })
	got, err := Lookup("hive")
	if err != nil || !Registered("hive") {
		t.Fatalf("Lookup(hive) after Register: %v", err)
	}
	_, _ = got(context.Background(), "c", nil)
	if !called {
		t.Fatal("Lookup returned another opener")
	}
	for name, f := range map[string]func(){
		"duplicate": func() { Register("hive", open) },
		"unknown":   func() { Register("nessie", open) },
		"nil":       func() { Register("glue", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("Register %s did not panic", name)
				}
			}()
			f()
		})
	}
}

// TestCheckLocation: gs:// and s3:// need their storage package (none is linked
// here); local paths and schemes we do not package pass.
func TestCheckLocation(t *testing.T) {
	for loc, imp := range map[string]string{
		"gs://b/wh": ImportGCS, "gcs://b/wh": ImportGCS, "s3://b/wh": ImportS3, "S3A://b/wh": ImportS3,
	} {
		err := CheckLocation("catalog_properties.warehouse", loc)
		var ce *config.ConfigError
		if !errors.As(err, &ce) || ce.Key != "catalog_properties.warehouse" || !strings.Contains(err.Error(), `_ "`+imp+`"`) {
			t.Errorf("CheckLocation(%q) = %v, want ConfigError naming %s", loc, err, imp)
		}
	}
	for _, loc := range []string{"file:///tmp/wh", "/tmp/wh", "lake", "abfs://c@a/wh", ""} {
		if err := CheckLocation("k", loc); err != nil {
			t.Errorf("CheckLocation(%q) = %v, want nil", loc, err)
		}
	}
}
