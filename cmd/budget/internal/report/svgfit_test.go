package report

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// svgText matches a text element as gonum/plot writes it: the group that
// turns it when it is turned, its x and y, its attributes up to the font
// size, the size, and its content.
var svgText = regexp.MustCompile(`(?s)(<g transform="rotate\([^)]*\)">\s*)?<text x="([-0-9.e]+)" y="([-0-9.e]+)"([^>]*?)font-size:([0-9.]+)px">([^<]*)</text>`)

// dejaVuEm are the advance widths, in ems, of DejaVu Sans, the sans-serif
// face a browser draws the charts with where Liberation Sans, the face the
// SVG names and gonum measured the texts with, is missing (Debian's
// default). DejaVu is the wider of the two, so a text gonum placed to fit
// by its own measure can run past the edge in a browser: the x of each text
// is fixed, and it grows to the right. Characters not listed count as
// defaultEm, wider than any lowercase letter but m and w.
var dejaVuEm = map[rune]float64{
	'a': .613, 'b': .635, 'c': .550, 'd': .635, 'e': .615, 'f': .352, 'g': .635, 'h': .634, 'i': .278,
	'j': .278, 'k': .579, 'l': .278, 'm': .974, 'n': .634, 'o': .612, 'p': .635, 'q': .635, 'r': .411,
	's': .521, 't': .392, 'u': .634, 'v': .592, 'w': .818, 'x': .592, 'y': .592, 'z': .525,
	' ': .318, ',': .318, '.': .318, ':': .337, ';': .337, '(': .390, ')': .390, '-': .361, '\'': .275,
	'%': .950, '/': .337, '×': .838, '–': .500,
	'0': .636, '1': .636, '2': .636, '3': .636, '4': .636, '5': .636, '6': .636, '7': .636, '8': .636, '9': .636,
}

const defaultEm = 0.7

// textWidth estimates how wide text is drawn in DejaVu Sans at size.
func textWidth(text string, size float64) float64 {
	w := 0.0
	for _, r := range text {
		em, ok := dejaVuEm[r]
		if !ok {
			em = defaultEm
		}
		w += em * size
	}
	return w
}

// svgFill matches a filled path: a bar, a legend's swatch, the background.
var svgFill = regexp.MustCompile(`<path d="([^"]+)" style="fill:#([0-9A-Fa-f]{6})`)

// box is a rectangle in the chart's own coordinates (y up, as gonum draws).
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	const slack = 0.5 // points: touching is not overlapping
	return a.x0 < b.x1-slack && b.x0 < a.x1-slack && a.y0 < b.y1-slack && b.y0 < a.y1-slack
}

// textsOutside lists the horizontal texts of an SVG chart that, drawn as
// wide as DejaVu Sans draws them, run past the viewBox or over a filled
// shape (a bar, a legend's swatch): a legend whose text gonum right-aligned
// to its swatch by Liberation Sans's measure runs into the swatch, and off
// the chart, in a browser that draws it wider.
func textsOutside(svg []byte) ([]string, error) {
	m := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`).FindSubmatch(svg)
	if m == nil {
		return nil, fmt.Errorf("no viewBox")
	}
	width, _ := strconv.ParseFloat(string(m[1]), 64)
	height, _ := strconv.ParseFloat(string(m[2]), 64)
	var shapes []box
	for _, f := range svgFill.FindAllSubmatch(svg, -1) {
		nums := regexp.MustCompile(`-?[0-9.]+(?:e-?[0-9]+)?`).FindAll(f[1], -1)
		if len(nums) < 4 || strings.EqualFold(string(f[2]), "FFFFFF") {
			continue // the white background
		}
		b := box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
		for i := 0; i+1 < len(nums); i += 2 {
			x, _ := strconv.ParseFloat(string(nums[i]), 64)
			y, _ := strconv.ParseFloat(string(nums[i+1]), 64)
			b = box{min(b.x0, x), min(b.y0, y), max(b.x1, x), max(b.y1, y)}
		}
		if b.x1-b.x0 > 0.5 && b.y1-b.y0 > 0.5 {
			shapes = append(shapes, b)
		}
	}
	var out []string
	for _, t := range svgText.FindAllSubmatch(svg, -1) {
		if len(t[1]) > 0 {
			continue // the y axis's label, turned to run along the left edge
		}
		text := html.UnescapeString(string(t[6]))
		x, _ := strconv.ParseFloat(string(t[2]), 64)
		base, _ := strconv.ParseFloat(string(t[3]), 64)
		size, _ := strconv.ParseFloat(string(t[5]), 64)
		base = -base // texts are flipped back upright: y is the baseline's, negated
		tb := box{x, base - 0.2*size, x + textWidth(text, size), base + 0.7*size}
		switch {
		case tb.x0 < 0 || tb.x1 > width || tb.y0 < 0 || tb.y1 > height:
			out = append(out, fmt.Sprintf("%q from x=%.1f to about %.1f, in a viewBox %.1f wide", text, tb.x0, tb.x1, width))
		default:
			for _, s := range shapes {
				if tb.overlaps(s) {
					out = append(out, fmt.Sprintf("%q (x %.1f–%.1f, y %.1f–%.1f) runs over a filled shape at x %.1f–%.1f, y %.1f–%.1f",
						text, tb.x0, tb.x1, tb.y0, tb.y1, s.x0, s.x1, s.y0, s.y1))
					break
				}
			}
		}
	}
	return out, nil
}
