// Package sdktest holds the tests of otelbudget that need the OpenTelemetry
// SDK, the Prometheus exporter and otelhttp. It is a module of its own so that
// those modules stay out of what otelbudget's users require: otelbudget itself
// requires only the OpenTelemetry API.
package sdktest
