// Package browser is a fixture of the layering test.
package browser
