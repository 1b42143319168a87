"""The data model: dtypes, typed schemas, native_functions entries and groups, the plan,
global sets and the annotations a yaml already declares. Data with parse/__str__ pairs;
it never runs torch."""
