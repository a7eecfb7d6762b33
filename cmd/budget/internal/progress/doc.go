// Package progress draws the demo's progress on stderr: one line redrawn in
// place on a terminal, a line per part otherwise.
package progress
