package db_test

import (
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
