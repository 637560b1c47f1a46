// The benchmark worker's workflow bundle: lockwarden's workflows and the floor workflows beside them.
export * from '../workflows';
export * from './floorWorkflows';
