import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys404 } from "../shared/list-keys-suite.js";

describe("keys.listKeys 404", () => {
  const h = useHarness();
  describeListKeys404(h, "/v2/keys.listKeys");
});
