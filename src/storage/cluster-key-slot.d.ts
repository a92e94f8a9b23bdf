// cluster-key-slot ships no types. Only the function keyhold calls is declared.
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0..16383) of a key, honouring its {hash tag}. */
  function calculateSlot(key: string): number;
  export = calculateSlot;
}
