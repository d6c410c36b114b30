package catalogs

import (
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// ParseIdent splits a table name such as "db.tbl" or "a.b.tbl" into an
// identifier: the last part is the table, the others its namespace. A name
// without a namespace or with an empty part is a ConfigError on key "table".
func ParseIdent(s string) (table.Identifier, error) {
	if strings.TrimSpace(s) == "" {
		return nil, config.Errorf("table", "must not be empty")
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, config.Errorf("table", "%q needs a namespace: use <namespace>.<table>", s)
	}
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			return nil, config.Errorf("table", "%q has an empty part at position %d", s, i+1)
		}
	}
	return table.Identifier(parts), nil
}
