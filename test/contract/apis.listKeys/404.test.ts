import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys404 } from "../shared/list-keys-suite.js";

describe("apis.listKeys 404", () => {
  const h = useHarness();
  describeListKeys404(h, "/v2/apis.listKeys");
});
