// Package registry holds the catalog types linked into a program and names the
// package to import for a catalog type or storage scheme that is not.
//
// Catalogs and FileIOs register by import, as database/sql drivers do, so that a
// worker binary links only what its pipeline uses. The REST catalog registers
// itself from package catalogs (every pipeline links it); the others register from
// the opt-in packages under github.com/icebeam/icebeam/iceberg/catalogs/ and
// iceberg/storage/. Storage schemes live in iceberg-go's own io registry; this
// package only knows which of our packages brings each one.
package registry
