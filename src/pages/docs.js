// Renders the service's own OpenAPI document; "Try it out" is off, as requests need a client's key.
window.SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, supportedSubmitMethods: [], defaultModelsExpandDepth: 0 });

// Swagger UI's dark theme, when the system asks for one.
const dark = window.matchMedia('(prefers-color-scheme: dark)');
const followScheme = () => document.documentElement.classList.toggle('dark-mode', dark.matches);
dark.addEventListener('change', followScheme);
followScheme();
