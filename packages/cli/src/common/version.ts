// The version of the published partner CLI (`counterpart --version`); `npm run build` refuses to
// build when it differs from packages/cli/package.json.

export const cliVersion = "0.2.0";
