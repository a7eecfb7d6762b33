package drivertest_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql keeps a connection opener per DB until Close; every
		// test closes its DB, but the opener exits asynchronously.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}
