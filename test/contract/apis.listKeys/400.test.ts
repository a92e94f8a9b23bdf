import { describe } from "vitest";
import { useHarness } from "../../harness.js";
import { describeListKeys400 } from "../shared/list-keys-suite.js";

describe("apis.listKeys 400", () => {
  const h = useHarness();
  describeListKeys400(h, "/v2/apis.listKeys");
});
