package server

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// The operator's page (GET /admin/): one HTML document with its style and
// script inline, all embedded in the binary (nothing is fetched from
// elsewhere). The script renders every name with textContent, never as
// markup; the Content-Security-Policy allows only this style and this
// script (by their SHA-256), no other origin, no inline handler, no frame.
//
//go:embed adminpage/index.html adminpage/admin.css adminpage/admin.js
var adminAssets embed.FS

var adminPage, adminCSP = buildAdminPage()

func buildAdminPage() (page []byte, csp string) {
	read := func(name string) string {
		b, err := adminAssets.ReadFile("adminpage/" + name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		return string(b)
	}
	css, js := read("admin.css"), read("admin.js")
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	html := strings.Replace(read("index.html"), "<!--style-->", "<style>"+css+"</style>", 1)
	html = strings.Replace(html, "<!--script-->", "<script>"+js+"</script>", 1)
	csp = "default-src 'none'; script-src " + hash(js) + "; style-src " + hash(css) +
		"; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return []byte(html), csp
}

// sendAdminPage answers the page with status (401 for a browser that has
// not given the key yet: the page then asks for it, and holds no data).
func sendAdminPage(c *fiber.Ctx, status int) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderContentSecurityPolicy, adminCSP)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(status).Send(adminPage)
}
