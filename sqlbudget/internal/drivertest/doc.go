// Package drivertest tests sqlbudget against real servers through real
// drivers (pgx's database/sql driver for PostgreSQL, go-sql-driver/mysql for
// MariaDB). It is a module of its own so that the root module, which
// sqlbudget belongs to, keeps no requirements.
package drivertest
