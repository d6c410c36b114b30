// Package read holds the machinery of icebeam's Iceberg read: scan planning (one
// planning step that pushes the filter down to Scan.PlanFiles), the splittable read
// DoFn that reads each scan task with row-group restrictions and dynamic splitting,
// projection of the keep/drop columns, and the SQL filter parser (ParseFilter) that
// turns the managed `filter` key (Calcite syntax) into an iceberg-go expression.
// Package iceberg is the user-facing facade over it.
package read
