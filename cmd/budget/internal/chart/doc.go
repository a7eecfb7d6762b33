// Package chart draws the charts of every report the command writes, budget
// demo's and budget sim's, in one style: gonum/plot in Liberation Sans,
// rendered as SVG, in the Okabe–Ito palette, which stays distinguishable
// with every common form of colour blindness.
//
// Colours carry one meaning each across the reports: the three outcomes
// (answered in budget, late, failed) have their own colours, and the series
// of a chart (p50, p99, …) take theirs from Series, which never reuses an
// outcome's colour, so a "p50" bar is never the red of "failed". Axes of
// shares stop at 100 %, and figures that differ by orders of magnitude go on
// a log scale (LogBars). Every bar also carries its value as a label, so no
// figure depends on telling colours apart.
package chart
