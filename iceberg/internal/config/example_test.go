package config_test

import (
	"fmt"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func ExampleParseSortField() {
	f, err := config.ParseSortField("bucket(16, id) desc")
	fmt.Println(f, err)
	// Output: bucket[16](id) desc nulls last <nil>
}
