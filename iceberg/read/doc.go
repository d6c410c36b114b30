// Package read holds the machinery of icebeam's Iceberg read: scan planning (one
// planning step that pushes the filter down to Scan.PlanFiles), the splittable read
// DoFn that reads each scan task with row-group restrictions and dynamic splitting,
// projection of the keep/drop columns, and the SQL filter parser (ParseFilter) that
// turns the managed `filter` key (Calcite syntax) into an iceberg-go expression.
// It also holds the changelog read (changes*.go: per-snapshot diffs of the live data
// files) and the continuous reads (watch*.go, stream.go, changes_watch.go,
// appends_watch.go: an unbounded splittable DoFn that follows main by snapshot sequence
// number and feeds the same read DoFns). Package iceberg is the user-facing facade over
// it.
package read
