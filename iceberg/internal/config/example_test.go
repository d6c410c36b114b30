package config_test

import (
	"errors"
	"fmt"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func ExampleParseWriteConfig() {
	_, err := config.ParseWriteConfig(map[string]any{
		"table":              "shop.orders",
		"catalog_name":       "lake",
		"catalog_properties": map[string]any{"type": "sql", "token": "never printed"},
		"num_shard":          4,
		"upsert":             true,
	})
	fmt.Println(errors.Is(err, config.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// iceberg: 2 configuration problems:
	//   - iceberg: config key "num_shard": unknown key (did you mean "num_shards"?)
	//   - iceberg: config key "upsert": applies only to mode "merge-on-read" (mode is "append")
}

func ExampleParseSortField() {
	f, err := config.ParseSortField("bucket(16, id) desc")
	fmt.Println(f, err)
	// Output: bucket[16](id) desc nulls last <nil>
}
