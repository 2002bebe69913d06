//! One declaration per request-body field, giving both its check and its documentation: a field type
//! ([`BodyField`]) reads itself through [`Fields`] (the spec's error codes and messages) and describes
//! itself as an OpenAPI schema from the same constants, and [`body!`] declares a body's fields once, in
//! the order they are checked, generating the struct, its reader and its `ToSchema`.

use crate::error::ApiError;
use crate::fields::Fields;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, RefBuilder, Schema, SchemaFormat};
use utoipa::openapi::schema::{SchemaType, Type};
use utoipa::openapi::RefOr;

/// Named schemas a schema refers to, as `ToSchema::schemas` collects them.
pub type Components = Vec<(String, RefOr<Schema>)>;

/// A field's type: how it is read from a body and how it is documented, from one set of constants.
pub trait BodyField: Sized {
    /// The property's schema: `nullable` when the field may be left out, with its description.
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema>;
    /// The named schemas [`BodyField::schema`] refers to.
    fn components(_out: &mut Components) {}
    /// The field `name` of `f`, `None` when absent or null; a bad value is its 400.
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError>;
}

/// A group of fields declared by [`body!`]: read in declaration order, documented as properties.
pub trait BodyGroup: Sized {
    fn read(f: &Fields<'_>) -> Result<Self, ApiError>;
    /// Adds the properties this group documents itself (not those of the components it flattens).
    fn properties(object: ObjectBuilder) -> ObjectBuilder;
    /// The named schemas the group's schema refers to, the flattened components with theirs.
    fn components(out: &mut Components);
}

/// A description from doc-comment lines, as utoipa's derive makes it: trailing space trimmed, the common
/// indentation removed, lines joined by `\n`; `None` without lines.
pub fn description(lines: &[&str]) -> Option<String> {
    let lines: Vec<&str> = lines.iter().map(|l| l.trim_end()).collect();
    let indent = lines.iter().filter(|l| !l.is_empty()).map(|l| l.len() - l.trim_ascii_start().len()).min();
    let indent = indent.unwrap_or(0);
    let text: Vec<&str> = lines.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// `t`, or `t` or null.
pub fn typed(t: Type, nullable: bool) -> SchemaType {
    if nullable {
        SchemaType::from_iter([t, Type::Null])
    } else {
        SchemaType::Type(t)
    }
}

/// An object schema of JSON type `t` (nullable when the field may be left out), described.
pub fn plain(t: Type, nullable: bool, description: Option<String>) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(typed(t, nullable)).description(description)
}

/// A reference to the named schema `name`; a field that may be left out is it or null.
pub fn reference(name: &str, nullable: bool, description: Option<String>) -> RefOr<Schema> {
    let named = RefBuilder::new().description(description).ref_location_from_schema_name(name);
    if nullable {
        let null = ObjectBuilder::new().schema_type(Type::Null);
        OneOfBuilder::new().item(named).item(null).into()
    } else {
        named.into()
    }
}

/// A value of a closed set of names (an enum on the wire), documented as the named string schema
/// [`Named::COMPONENT`] listing [`Named::NAMES`]; the same table reads it.
pub trait Named: Copy + 'static {
    const COMPONENT: &'static str;
    const NAMES: &'static [(&'static str, Self)];

    fn named(raw: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(name, _)| *name == raw).map(|(_, v)| *v)
    }

    /// The names quoted and joined, as error messages list them: `"auto", "off"`.
    fn quoted_names() -> String {
        Self::NAMES.iter().map(|(name, _)| format!("{name:?}")).collect::<Vec<_>>().join(", ")
    }

    fn component(out: &mut Components) {
        let names = Self::NAMES.iter().map(|(name, _)| *name);
        let schema = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names));
        out.push((Self::COMPONENT.to_owned(), schema.into()));
    }
}

/// A boolean.
impl BodyField for bool {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::Boolean, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.opt_bool(name)
    }
}

/// A finite number.
impl BodyField for f64 {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::Number, nullable, description).format(Some(SchemaFormat::KnownFormat(KnownFormat::Double))).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.opt_f64(name)
    }
}

/// A whole number within `MIN..=MAX`: the schema's `minimum` and `maximum` are the bounds the check uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> BodyField for Int<MIN, MAX> {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let format = SchemaFormat::KnownFormat(KnownFormat::Int64);
        let bounded = plain(Type::Integer, nullable, description).format(Some(format));
        bounded.minimum(Some(MIN as f64)).maximum(Some(MAX as f64)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        Ok(f.opt_u64_in(name, MIN, MAX)?.map(Self))
    }
}

/// Declares a request body once: a struct whose fields are read in declaration order under their JSON
/// names, implementing [`BodyGroup`] and `ToSchema`. Each field is `KIND ["jsonName"] name: Type`, its doc
/// comment its description, optionally followed by `where CHECK` (a `Result<(), ApiError>` over the fields
/// read so far, checked right after this one); `pub struct Name before CHECK { ... }` runs `CHECK(&Fields)` before
/// any field is read (a rule over several fields' presence), `unknown RULE` runs `RULE(&Fields, &[names])` with
/// the JSON names declared here (not a group's) before anything else (a body that refuses other fields), `as Schema` names the
/// component `Schema` instead of `Name`, and `required ["a", "b"]` orders the documented `required` list
/// (which the `req` fields make, in check order otherwise). Kinds:
/// - `opt "name" x: T`: an optional field (`Option<T>`, `T: BodyField`), documented as nullable;
/// - `req "name" x: T`: a required field (`T`), documented in `required`; absent is `name is required`
///   (unless `T`'s read answers an absent value itself, as a message's `newState` does);
/// - `hidden "name" x: T`: read like `opt` but not documented (the published document leaves it out);
/// - `flatten x: G`: the group `G` read here and documented as the component `G` in `allOf`;
/// - `merge x: G`: the group `G` read here, its properties documented as this struct's own;
/// - `read x: G`: the group `G` read here, documented through another component (`doc`);
/// - `doc x: C`: the component `C` in `allOf`, its fields read through `read` entries.
#[macro_export]
#[doc(hidden)]
macro_rules! body {
    (
        $(#[doc = $doc:literal])*
        pub struct $name:ident $(as $schema_name:ident)? $(before $pre:ident)? $(unknown $unknown:ident)?
            $(required [$($req:literal),* $(,)?])? {
            $(
                $(#[doc = $fdoc:literal])*
                $kind:ident $($json:literal)? $field:ident : $ty:ty $(where $check:expr)?
            ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $($(#[doc = $fdoc])* pub $field: $crate::params::decl::stored!($kind $ty),)*
        }

        impl $crate::params::decl::BodyGroup for $name {
            fn read(f: &$crate::fields::Fields<'_>) -> Result<Self, $crate::error::ApiError> {
                let _declared: &[&str] = &[$($($json,)?)*];
                $($unknown(f, _declared)?;)?
                $($pre(f)?;)?
                $(
                    let $field = $crate::params::decl::read_entry!($kind f [$($json)?] $ty);
                    $($check?;)?
                )*
                Ok($name { $($field,)* })
            }
            fn properties(
                object: utoipa::openapi::schema::ObjectBuilder,
            ) -> utoipa::openapi::schema::ObjectBuilder {
                $(
                    let object = $crate::params::decl::property!(
                        $kind object [$($json)?] $ty, $crate::params::decl::description(&[$($fdoc),*])
                    );
                )*
                $(let object = $crate::params::decl::required_order(object, &[$($req),*]);)?
                object
            }
            fn components(out: &mut $crate::params::decl::Components) {
                $($crate::params::decl::components!($kind out $ty);)*
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use $crate::params::decl::BodyGroup;
                let flattened = [$($crate::params::decl::flattened!($kind $ty)),*];
                let own = <$name as BodyGroup>::properties(utoipa::openapi::schema::ObjectBuilder::new());
                let description = $crate::params::decl::description(&[$($doc),*]);
                $crate::params::decl::group_schema(flattened.into_iter().flatten().collect(), own, description)
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                let names = [stringify!($name) $(, stringify!($schema_name))?];
                std::borrow::Cow::Borrowed(names[names.len() - 1])
            }
            fn schemas(out: &mut $crate::params::decl::Components) {
                <$name as $crate::params::decl::BodyGroup>::components(out)
            }
        }
    };
}

/// The type a field of each kind is stored as.
#[macro_export]
#[doc(hidden)]
macro_rules! stored {
    (opt $ty:ty) => { Option<$ty> };
    (hidden $ty:ty) => { Option<$ty> };
    (req $ty:ty) => { $ty };
    (flatten $ty:ty) => { $ty };
    (merge $ty:ty) => { $ty };
    (read $ty:ty) => { $ty };
    (doc $ty:ty) => { std::marker::PhantomData<$ty> };
}

/// How a field of each kind is read.
#[macro_export]
#[doc(hidden)]
macro_rules! read_entry {
    (opt $f:ident [$json:literal] $ty:ty) => {
        <$ty as $crate::params::decl::BodyField>::read($f, $json)?
    };
    (hidden $f:ident [$json:literal] $ty:ty) => {
        <$ty as $crate::params::decl::BodyField>::read($f, $json)?
    };
    (req $f:ident [$json:literal] $ty:ty) => {
        <$ty as $crate::params::decl::BodyField>::read($f, $json)?.ok_or_else(|| $f.required($json))?
    };
    (flatten $f:ident [] $ty:ty) => {
        <$ty as $crate::params::decl::BodyGroup>::read($f)?
    };
    (merge $f:ident [] $ty:ty) => {
        <$ty as $crate::params::decl::BodyGroup>::read($f)?
    };
    (read $f:ident [] $ty:ty) => {
        <$ty as $crate::params::decl::BodyGroup>::read($f)?
    };
    (doc $f:ident [] $ty:ty) => {
        std::marker::PhantomData
    };
}

/// What a field of each kind adds to its struct's own properties.
#[macro_export]
#[doc(hidden)]
macro_rules! property {
    (opt $o:ident [$json:literal] $ty:ty, $d:expr) => {
        $o.property($json, <$ty as $crate::params::decl::BodyField>::schema(true, $d))
    };
    (req $o:ident [$json:literal] $ty:ty, $d:expr) => {
        $o.property($json, <$ty as $crate::params::decl::BodyField>::schema(false, $d)).required($json)
    };
    (merge $o:ident [] $ty:ty, $d:expr) => {
        <$ty as $crate::params::decl::BodyGroup>::properties($o)
    };
    ($other:ident $o:ident [$($json:literal)?] $ty:ty, $d:expr) => {
        $o
    };
}

/// The named schemas a field of each kind refers to.
#[macro_export]
#[doc(hidden)]
macro_rules! components {
    (opt $out:ident $ty:ty) => {
        <$ty as $crate::params::decl::BodyField>::components($out)
    };
    (req $out:ident $ty:ty) => {
        <$ty as $crate::params::decl::BodyField>::components($out)
    };
    (merge $out:ident $ty:ty) => {
        <$ty as $crate::params::decl::BodyGroup>::components($out)
    };
    (flatten $out:ident $ty:ty) => {
        $crate::params::decl::component::<$ty>($out)
    };
    (doc $out:ident $ty:ty) => {
        $crate::params::decl::component::<$ty>($out)
    };
    ($other:ident $out:ident $ty:ty) => {};
}

/// The `allOf` entry of a field of each kind, if any.
#[macro_export]
#[doc(hidden)]
macro_rules! flattened {
    (flatten $ty:ty) => {
        Some($crate::params::decl::reference(&<$ty as utoipa::ToSchema>::name(), false, None))
    };
    (doc $ty:ty) => {
        Some($crate::params::decl::reference(&<$ty as utoipa::ToSchema>::name(), false, None))
    };
    ($other:ident $ty:ty) => {
        None
    };
}

pub use crate::{body, components, flattened, property, read_entry, stored};

/// `object` with its `required` names in the order of `order` (names it does not list keep their order,
/// after those it lists): it orders the list the `req` fields made, never adds to it.
pub fn required_order(object: ObjectBuilder, order: &[&str]) -> ObjectBuilder {
    let mut object = object.build();
    let rank = |name: &String| order.iter().position(|o| o == name).unwrap_or(order.len());
    object.required.sort_by_key(rank);
    object.into()
}

/// Registers the component `T` and those it refers to.
pub fn component<T: utoipa::ToSchema>(out: &mut Components) {
    out.push((T::name().into_owned(), T::schema()));
    T::schemas(out);
}

/// A group's schema as utoipa's derive makes it: its own object, or `allOf` the flattened components and
/// then its own object (when it has properties), described.
pub fn group_schema(flattened: Vec<RefOr<Schema>>, own: ObjectBuilder, description: Option<String>) -> RefOr<Schema> {
    if flattened.is_empty() {
        return own.description(description).into();
    }
    let own = own.build();
    let mut all = utoipa::openapi::schema::AllOfBuilder::new().description(description);
    for item in flattened {
        all = all.item(item);
    }
    if !own.properties.is_empty() {
        all = all.item(own);
    }
    all.into()
}
