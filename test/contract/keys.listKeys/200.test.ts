import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys200 } from "../shared/list-keys-suite.js";

describe("keys.listKeys 200", () => {
  const h = useHarness();
  describeListKeys200(h, "/v2/keys.listKeys");
});
