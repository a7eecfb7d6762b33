// Package postgres runs the checkout scenario's payment work in PostgreSQL
// as pg_sleep statements, through pgxbudget or plain pgx, and measures from
// pg_stat_activity how long the server goes on executing a statement after its
// caller has left.
package postgres
