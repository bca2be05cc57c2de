package parley

// gqlgen reads gqlgen.yml from the module root and resolves its paths from there.
//go:generate go run github.com/99designs/gqlgen generate
