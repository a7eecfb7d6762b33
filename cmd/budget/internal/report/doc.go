// Package report holds what the demo measured (Report, which is
// report.json) and renders it: the terminal table, and report.html from an
// embedded template with its charts. Every figure of the three comes from the
// one Report value, so they always agree.
package report
