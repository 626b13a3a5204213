package caps

// The manifest's JSON Schema is generated from the types in this package;
// TestSchemaUpToDate fails when the committed file differs.
//go:generate go run ./internal/genschema/cmd/genschema -o ../../spec/manifest/v1/schema.json
