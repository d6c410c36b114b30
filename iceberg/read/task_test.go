package read

import (
	"slices"
	"testing"
)

func TestSplitUnits(t *testing.T) {
	cases := []struct {
		name       string
		start, end int64
		offsets    []int64
		want       []int64
	}{
		{"whole file", 0, 1000, []int64{4, 300, 600}, []int64{0, 300, 600}},
		{"no offsets", 0, 1000, nil, []int64{0}},
		{"one row group", 0, 1000, []int64{4}, []int64{0}},
		{"partial task", 300, 1000, []int64{4, 300, 600, 900}, []int64{300, 600, 900}},
		{"partial task ending early", 0, 600, []int64{4, 300, 600, 900}, []int64{0, 300}},
		{"unsorted garbage ignored", 0, 1000, []int64{4, 300, 200, 5000}, []int64{0, 300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := splitUnits(c.start, c.end, c.offsets); !slices.Equal(got, c.want) {
				t.Errorf("splitUnits(%d, %d, %v) = %v, want %v", c.start, c.end, c.offsets, got, c.want)
			}
		})
	}
}
