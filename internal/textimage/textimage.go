// Package textimage renders known text into images for tests of OCR and vision: black
// Go Regular text on white, large enough for Tesseract to read reliably.
package textimage

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// PNG renders lines of text, one under the other, and returns the PNG's bytes.
func PNG(lines ...string) []byte {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		panic(err)
	}
	const size, margin = 40, 30
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err)
	}
	defer face.Close()
	width := 0
	for _, l := range lines {
		if w := font.MeasureString(face, l).Ceil(); w > width {
			width = w
		}
	}
	lineHeight := size * 3 / 2
	img := image.NewRGBA(image.Rect(0, 0, width+2*margin, len(lines)*lineHeight+2*margin))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	for i, l := range lines {
		d.Dot = fixed.P(margin, margin+size+i*lineHeight)
		d.DrawString(l)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
