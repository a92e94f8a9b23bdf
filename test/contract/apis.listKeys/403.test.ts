import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys403 } from "../shared/list-keys-suite.js";

describe("apis.listKeys 403", () => {
  const h = useHarness();
  describeListKeys403(h, "/v2/apis.listKeys");
});
