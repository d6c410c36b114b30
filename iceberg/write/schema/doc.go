// Package schema is what a write knows of its tables' schemas and layout: table
// creation with partition spec and sort order ([EnsureTable]), the check of rows
// against a table's schema ([CheckSchema]), schema evolution ([PlanEvolution],
// [EvolveTable], a commit.Change), and the keep, drop and only projection of rows
// and schemas ([Projection]).
package schema
