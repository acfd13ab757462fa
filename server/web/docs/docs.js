// The API reference page: Swagger UI (swagger-ui-dist, served by this server) on /openapi.json.
// A file of its own rather than an inline script, so that the page's policy allows no inline script.
(() => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // The page loads nothing from elsewhere: no validator badge from swagger.io.
    validatorUrl: null,
  });
})();
