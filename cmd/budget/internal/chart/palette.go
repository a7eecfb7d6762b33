package chart

import "image/color"

// The Okabe–Ito palette (Okabe and Ito, "Color Universal Design", 2008).
var (
	Orange     = color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}
	SkyBlue    = color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}
	Green      = color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}
	Blue       = color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}
	Vermillion = color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}
	Purple     = color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}
	Black      = color.RGBA{A: 0xFF}
	// Grey marks what is not a measurement (the demo's own cut-off);
	// PaleBlue is a background band.
	Grey     = color.RGBA{R: 0xB8, G: 0xB8, B: 0xB8, A: 0xFF}
	PaleBlue = color.RGBA{R: 0xDD, G: 0xE8, B: 0xF2, A: 0xFF}
)

// The colours of the three outcomes, on every chart and in the pages'
// legends alike.
var (
	InBudget = Blue
	Late     = Orange
	Failed   = Vermillion
)

// Series returns the colour of a chart's i'th series (p50, p99, …): sky
// blue, purple, green, black, then round again. None is an outcome's
// colour, so a series never reads as "failed" or "late".
func Series(i int) color.Color {
	s := [...]color.Color{SkyBlue, Purple, Green, Black}
	return s[((i%len(s))+len(s))%len(s)]
}

// Hex renders a colour as CSS's #RRGGBB, so a page's legend shows the
// charts' own colours.
func Hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	const hex = "0123456789ABCDEF"
	out := []byte{'#', 0, 0, 0, 0, 0, 0}
	for i, v := range []uint32{r >> 8, g >> 8, b >> 8} {
		out[1+2*i], out[2+2*i] = hex[v>>4], hex[v&0xF]
	}
	return string(out)
}
