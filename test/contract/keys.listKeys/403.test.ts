import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys403 } from "../shared/list-keys-suite.js";

describe("keys.listKeys 403", () => {
  const h = useHarness();
  describeListKeys403(h, "/v2/keys.listKeys");
});
