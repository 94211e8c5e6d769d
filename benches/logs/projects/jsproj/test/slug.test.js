// The JavaScript suite whose `npm test` run the corpus records (two fail on purpose).
const test = require("node:test");
const assert = require("node:assert");

function slug(s) {
  return s.toLowerCase().trim().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
}

for (let i = 0; i < 20; i++) {
  test(`slug of title ${i}`, () => {
    assert.strictEqual(slug(`Title Number ${i}`), `title-number-${i}`);
  });
}

test("unicode is kept", () => {
  assert.strictEqual(slug("Crème Brûlée"), "creme-brulee");
});

test("empty input", () => {
  assert.deepStrictEqual({ slug: slug("") }, { slug: "untitled" });
});
