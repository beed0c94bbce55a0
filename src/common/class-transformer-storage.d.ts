// class-transformer keeps its decorators' metadata (which class a nested property
// holds, from @Type) in this module, and ships its types separately.
declare module 'class-transformer/cjs/storage.js' {
  export { defaultMetadataStorage } from 'class-transformer/types/storage.js';
}
