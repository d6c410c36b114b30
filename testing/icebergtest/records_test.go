package icebergtest

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func TestBuildRecordsValues(t *testing.T) {
	u := uuid.MustParse("0190d7a4-31b5-7d3c-9a4b-4f1f6a3f9c2e")
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	row := []any{
		int64(7), true, int32(-3), int64(1 << 40), float32(1.5), 2.25, "12.34",
		"2024-05-06", 90 * time.Minute, ts, ibg.Timestamp(ts.UnixMicro()), "x", u,
		[]byte{1, 2, 3, 4}, "bin",
		[]any{int32(1), nil}, []int64{1, 2}, map[string]int32{"b": 2, "a": 1},
	}
	rec := Records(t, SampleSchema(), [][]any{row})
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	t.Cleanup(tbl.Release)
	got := RowStrings(tbl, nil)[0]
	for _, want := range []string{
		"id=7", "bool_col=true", "int_col=-3", "decimal_col=12.34", "date_col=2024-05-06",
		"time_col=01:30:00.000000", "ts_col=2024-05-06T07:08:09.123456,", `string_col="x"`,
		"uuid_col=" + u.String(), "struct_col={\"a\":1,\"b\":null}", "list_col=[1,2]",
		`map_col=[{"key":"a","value":1},{"key":"b","value":2}]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("row %s lacks %s", got, want)
		}
	}
}

func TestBuildRecordsErrors(t *testing.T) {
	sc := SampleSchema()
	good := SampleRows(1, 1)[0]
	with := func(col int, v any) [][]any {
		row := append([]any(nil), good...)
		row[col] = v

		return [][]any{row}
	}
	tests := []struct {
		name string
		rows [][]any
		want string
	}{
		{"short row", [][]any{{int64(1)}}, "has 1 values, schema has 18 columns"},
		{"null id", with(0, nil), `null in required column "id"`},
		{"wrong type", with(2, "yes"), `column "int_col": cannot use string as int`},
		{"fixed width", with(13, []byte{1}), "fixed[4] value has 1 bytes"},
		{"bad uuid", with(12, "nope"), `column "uuid_col"`},
		{"unknown struct field", with(15, map[string]any{"a": int32(1), "zz": 1}), `struct has no field "zz"`},
		{"null in required struct field", with(15, map[string]any{"b": "x"}), `null in required field "a"`},
		{"decimal scale", with(6, ibg.Decimal{Scale: 3}), "decimal scale 3, column has 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := BuildRecords(sc, tc.rows)
			if err == nil {
				rec.Release()
				t.Fatalf("BuildRecords = nil error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("BuildRecords error %q lacks %q", err, tc.want)
			}
		})
	}
}
