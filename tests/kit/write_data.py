"""Writes the shipped task files under evaluator/harness/tasks/data/ (run: python -m tests.kit.write_data).

Every example here was written for this project's tests, never copied from the real datasets: small
question banks, combined deterministically into the record layout of each Hugging Face dataset so that a
real export in the same layout drops into --data-dir unchanged. `easy_qa` holds questions a small
instruction-tuned model should get right (tests/harness: SmolLM2 scores clearly above chance on it).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "evaluator" / "harness" / "tasks" / "data"
LABELS = "ABCD"

# (question, right answer, three wrong answers): everyday facts, the easy kind.
EASY = [
    ("What color is the sky on a clear sunny day?", "blue", ["green", "black", "purple"]),
    ("How many legs does a dog have?", "four", ["two", "six", "ten"]),
    ("What do bees make?", "honey", ["milk", "wool", "glass"]),
    ("Which animal says moo?", "a cow", ["a cat", "a snake", "a fish"]),
    ("What is frozen water called?", "ice", ["steam", "sand", "smoke"]),
    ("What do you use to see?", "your eyes", ["your ears", "your feet", "your elbows"]),
    ("What is the opposite of hot?", "cold", ["warm", "loud", "tall"]),
    ("Which season comes after winter?", "spring", ["autumn", "summer", "midnight"]),
    ("What is the capital of France?", "Paris", ["Berlin", "Madrid", "Tokyo"]),
    ("What do plants need from the sky to grow?", "sunlight", ["plastic", "noise", "coins"]),
    ("How many days are in a week?", "seven", ["three", "twelve", "thirty"]),
    ("What animal is known as man's best friend?", "the dog", ["the shark", "the spider", "the crab"]),
    ("What do cows drink?", "water", ["gasoline", "ink", "paint"]),
    ("Which planet do we live on?", "Earth", ["Mars", "the Moon", "the Sun"]),
    ("What color are ripe bananas?", "yellow", ["blue", "black", "white"]),
    ("What do you wear on your feet?", "shoes", ["hats", "gloves", "scarves"]),
    ("What is the opposite of up?", "down", ["left", "red", "soft"]),
    ("Which is the largest ocean on Earth?", "the Pacific Ocean", ["a small pond", "a bathtub", "a puddle"]),
    ("What gas do people need to breathe?", "oxygen", ["helium", "smoke", "neon"]),
    ("Where do fish live?", "in water", ["in trees", "in the desert", "in the clouds"]),
    ("What shines in the sky during the day?", "the Sun", ["the Moon", "a lamp", "a candle"]),
    ("How many hours are in a day?", "twenty-four", ["seven", "one hundred", "three"]),
    ("What do birds use to fly?", "wings", ["wheels", "fins", "roots"]),
    ("What is the color of grass?", "green", ["orange", "pink", "grey"]),
    ("What do you call a baby cat?", "a kitten", ["a puppy", "a calf", "a foal"]),
    ("Which fruit is red and often used to make ketchup?", "the tomato", ["the banana", "the lemon", "the grape"]),
    ("What do people use to write on paper?", "a pen", ["a spoon", "a shoe", "a pillow"]),
    ("Which month comes after January?", "February", ["March", "December", "June"]),
    ("What does a thermometer measure?", "temperature", ["weight", "distance", "color"]),
    ("What is two plus two?", "four", ["five", "one", "nine"]),
    ("What is the capital of Japan?", "Tokyo", ["Paris", "Cairo", "Lima"]),
    ("What falls from clouds when it rains?", "water", ["sand", "rocks", "leaves"]),
    ("Which animal has a long trunk?", "the elephant", ["the rabbit", "the mouse", "the frog"]),
    ("What do you use to cut paper?", "scissors", ["a spoon", "a cup", "a sock"]),
    ("What color is snow?", "white", ["green", "red", "brown"]),
    ("Where does a bird lay its eggs?", "in a nest", ["in a car", "in a book", "in a shoe"]),
    ("What organ pumps blood through the body?", "the heart", ["the hair", "the nails", "the teeth"]),
    ("How many wheels does a bicycle have?", "two", ["five", "eight", "zero"]),
    ("What do we call the meal eaten in the morning?", "breakfast", ["dinner", "midnight", "lunchbox"]),
    ("Which is the hottest: fire, ice or snow?", "fire", ["ice", "snow", "frost"]),
]

# Harder, science-flavoured (ARC-Challenge-like) questions.
SCIENCE = [
    (
        "Which process do plants use to turn light into chemical energy?",
        "photosynthesis",
        ["evaporation", "erosion", "condensation"],
    ),
    ("What force pulls objects toward the center of the Earth?", "gravity", ["friction", "magnetism", "inertia"]),
    ("Which part of a cell contains its genetic material?", "the nucleus", ["the wall", "the vacuole", "the membrane"]),
    (
        "What happens to water when it boils?",
        "it changes into a gas",
        ["it becomes a solid", "it turns blue", "it becomes heavier"],
    ),
    ("Which layer of the Earth lies at its center?", "the inner core", ["the crust", "the mantle", "the ocean"]),
    ("What type of rock forms from cooled lava?", "igneous rock", ["sedimentary rock", "metamorphic rock", "chalk"]),
    ("Which unit is used to measure electrical resistance?", "the ohm", ["the meter", "the gram", "the liter"]),
    (
        "Why does the Moon appear to change shape during a month?",
        "different parts of its lit side face Earth",
        ["it shrinks and grows", "clouds cover it", "it stops orbiting"],
    ),
    ("Which material conducts electricity best?", "copper", ["wood", "rubber", "glass"]),
    ("What do animals release when they breathe out?", "carbon dioxide", ["oxygen", "nitrogen only", "helium"]),
    ("Which simple machine is a ramp?", "an inclined plane", ["a pulley", "a lever", "a wheel"]),
    (
        "What causes day and night on Earth?",
        "the rotation of the Earth",
        ["the orbit of the Moon", "clouds", "the tides"],
    ),
    ("Which state of matter has a fixed shape?", "solid", ["liquid", "gas", "plasma"]),
    ("What is the main source of energy for the water cycle?", "the Sun", ["the Moon", "volcanoes", "wind turbines"]),
    ("Which organ do fish use to breathe?", "gills", ["lungs", "fins", "scales"]),
    (
        "What is the boiling point of water at sea level in Celsius?",
        "100 degrees",
        ["10 degrees", "50 degrees", "500 degrees"],
    ),
    ("Which blood cells fight infection?", "white blood cells", ["red blood cells", "platelets only", "bone cells"]),
    ("Which planet is closest to the Sun?", "Mercury", ["Neptune", "Jupiter", "Saturn"]),
    (
        "What kind of energy is stored in a stretched spring?",
        "potential energy",
        ["sound energy", "light energy", "nuclear energy"],
    ),
    ("Which property of a mineral describes how it reflects light?", "luster", ["hardness", "streak", "cleavage"]),
    (
        "What do decomposers do in an ecosystem?",
        "break down dead matter",
        ["make sunlight", "hunt large animals", "produce oxygen at night"],
    ),
    (
        "Why do we see lightning before we hear thunder?",
        "light travels faster than sound",
        ["sound travels faster than light", "thunder happens later", "our ears are slow"],
    ),
    ("Which gas makes up most of Earth's air?", "nitrogen", ["oxygen", "carbon dioxide", "hydrogen"]),
    ("What is a food chain's first link usually?", "a plant", ["a lion", "a hawk", "a shark"]),
]

# (context, question, right, two wrong) for Social IQa-style questions.
SOCIAL = [
    ("Alex forgot his lunch at home.", "How would Alex feel at noon?", "hungry", ["full", "sleepy from eating"]),
    ("Jordan won the school race.", "How would Jordan feel?", "proud", ["ashamed", "bored"]),
    ("Sam gave a gift to a friend.", "Why did Sam do this?", "to be kind", ["to be rude", "to lose the friend"]),
    (
        "Riley broke a neighbor's window by accident.",
        "What should Riley do next?",
        "apologize to the neighbor",
        ["hide forever", "break another window"],
    ),
    (
        "Taylor studied all week for the test.",
        "What will happen to Taylor?",
        "do well on the test",
        ["forget how to read", "miss the test on purpose"],
    ),
    (
        "Casey's dog was lost for two days.",
        "How would Casey feel when it came home?",
        "relieved",
        ["angry at the weather", "indifferent"],
    ),
    ("Morgan helped an old man cross the street.", "How would others describe Morgan?", "helpful", ["selfish", "lazy"]),
    (
        "Jamie spilled juice on a friend's shirt.",
        "What will Jamie want to do next?",
        "help clean it",
        ["laugh and leave", "spill more juice"],
    ),
    (
        "Quinn was invited to a birthday party.",
        "What does Quinn need to do before going?",
        "get a present",
        ["sell the house", "learn to fly"],
    ),
    (
        "Avery stayed up all night.",
        "How would Avery feel the next morning?",
        "tired",
        ["energetic", "hungry for sleep"],
    ),
    (
        "Drew lent a book to a classmate.",
        "What will the classmate want to do?",
        "read the book",
        ["burn the book", "eat the book"],
    ),
    ("Pat got a new puppy.", "How would Pat feel?", "happy", ["sad", "furious"]),
    (
        "Kai missed the bus.",
        "What will Kai need to do?",
        "find another way to get there",
        ["buy the bus", "wait for winter"],
    ),
    ("Rowan cooked dinner for the family.", "How would the family feel?", "grateful", ["insulted", "scared"]),
    (
        "Skyler lost the keys to the house.",
        "What will Skyler do next?",
        "look for the keys",
        ["paint the door", "sell the car"],
    ),
    ("Blake told a funny joke at lunch.", "How did the friends react?", "they laughed", ["they cried", "they slept"]),
    (
        "Emerson was new at school.",
        "What would Emerson want?",
        "to make friends",
        ["to be ignored", "to leave at once"],
    ),
    ("Harper cleaned the whole kitchen.", "How would Harper feel afterwards?", "satisfied", ["dirty", "confused"]),
    (
        "Reese forgot a friend's birthday.",
        "What should Reese do?",
        "say sorry and celebrate late",
        ["forget the friend", "blame the calendar forever"],
    ),
    (
        "Finley practiced piano every day.",
        "Why did Finley do this?",
        "to get better at piano",
        ["to break the piano", "to annoy nobody"],
    ),
    (
        "Dakota shared an umbrella in the rain.",
        "How would the other person feel?",
        "thankful",
        ["wet and angry", "jealous"],
    ),
    ("Logan got lost in a new city.", "What would Logan do?", "ask for directions", ["go to sleep", "start a band"]),
    (
        "Parker won a prize in a contest.",
        "What will Parker do next?",
        "collect the prize",
        ["throw the prize away", "cry about winning"],
    ),
    (
        "Charlie's friend was sick at home.",
        "What might Charlie do?",
        "visit with soup",
        ["throw a party there", "ignore the friend"],
    ),
]

# (goal, right solution, wrong solution) for PIQA-style physical questions.
PHYSICAL = [
    ("To keep ice cream from melting,", "put it in the freezer.", "put it in the oven."),
    ("To dry wet hair,", "use a towel.", "use a bucket of water."),
    ("To open a locked door,", "use the key.", "use a banana."),
    ("To boil water,", "heat it in a pot on the stove.", "put it in the fridge."),
    ("To make a room darker,", "close the curtains.", "turn on every light."),
    ("To carry soup to the table,", "use a bowl.", "use a sieve."),
    ("To cut bread,", "use a knife.", "use a towel."),
    ("To stay dry in the rain,", "use an umbrella.", "use a fork."),
    ("To light a candle,", "use a match.", "use an ice cube."),
    ("To clean a dirty plate,", "wash it with soap and water.", "rub it with mud."),
    ("To see in the dark,", "turn on a flashlight.", "close your eyes."),
    ("To cool down a hot drink,", "add an ice cube.", "heat it in the microwave."),
    ("To hang a picture on the wall,", "use a nail and a hammer.", "use a wet noodle."),
    ("To keep papers together,", "use a paper clip.", "use a glass of milk."),
    ("To warm up cold hands,", "rub them together.", "hold snow."),
    ("To water a plant,", "pour water into its pot.", "pour sand on its leaves."),
    ("To make toast,", "put bread in a toaster.", "put bread in the freezer."),
    ("To sharpen a pencil,", "use a pencil sharpener.", "use an eraser."),
    ("To tie a shoe,", "loop the laces and pull them tight.", "glue the laces to the floor."),
    ("To fill a balloon,", "blow air into it.", "poke holes in it."),
    ("To measure the length of a table,", "use a tape measure.", "use a thermometer."),
    ("To sweep the floor,", "use a broom.", "use a spoon."),
    ("To stop a bike,", "squeeze the brakes.", "pedal faster."),
    ("To remove a stain from a shirt,", "wash it with detergent.", "paint over it with ketchup."),
]

# (sentence with _, option1, option2, answer) for Winogrande-style pairs.
WINO = [
    ("The trophy did not fit in the suitcase because the _ was too big.", "trophy", "suitcase", "1"),
    ("The trophy did not fit in the suitcase because the _ was too small.", "trophy", "suitcase", "2"),
    ("Anna poured water from the bottle into the cup until the _ was full.", "bottle", "cup", "2"),
    ("Anna poured water from the bottle into the cup until the _ was empty.", "bottle", "cup", "1"),
    ("The ball broke the window because the _ was fragile.", "ball", "window", "2"),
    ("The ball broke the window because the _ was thrown hard.", "ball", "window", "1"),
    ("The cat chased the mouse because the _ was hungry.", "cat", "mouse", "1"),
    ("The cat chased the mouse, so the _ ran into a hole.", "cat", "mouse", "2"),
    ("The sun melted the snow because the _ was warm.", "sun", "snow", "1"),
    ("The sun melted the snow, and soon the _ was gone.", "sun", "snow", "2"),
    ("The bag was heavier than the box, so the _ was harder to lift.", "bag", "box", "1"),
    ("The bag was heavier than the box, so the _ was easier to lift.", "bag", "box", "2"),
    ("The coat kept Maria warm because the _ was thick.", "coat", "Maria", "1"),
    ("The knife could not cut the steak because the _ was dull.", "knife", "steak", "1"),
    ("The knife could not cut the steak because the _ was too tough.", "knife", "steak", "2"),
    ("The car passed the truck because the _ was going faster.", "car", "truck", "1"),
    ("The car passed the truck because the _ was going slower.", "car", "truck", "2"),
    ("The lamp lit the room because the _ was switched on.", "lamp", "room", "1"),
    ("The plant grew taller than the fence because the _ got plenty of sun.", "plant", "fence", "1"),
    ("The glass fell on the rug and did not break because the _ was soft.", "glass", "rug", "2"),
    ("The glass fell on the tile and broke because the _ was hard.", "glass", "tile", "2"),
    ("Tom gave Ben his umbrella because _ was going to get wet.", "Tom", "Ben", "2"),
    ("The river flooded the town because the _ rose too high.", "river", "town", "1"),
    ("The teacher praised the student because the _ did great work.", "teacher", "student", "2"),
]

# (activity, context start, context continuation, right ending, three wrong endings): HellaSwag-like.
STORIES = [
    (
        "Making tea",
        "A woman fills a kettle with water.",
        "she",
        "puts the kettle on the stove.",
        ["throws the kettle out the window.", "plants the kettle in the garden.", "paints the kettle with glue."],
    ),
    (
        "Washing a car",
        "A man sprays the car with a hose.",
        "he",
        "scrubs it with a soapy sponge.",
        ["eats the garden hose for lunch.", "covers the car in fresh mud.", "flies the car to the moon."],
    ),
    (
        "Brushing teeth",
        "A boy puts toothpaste on a toothbrush.",
        "he",
        "brushes his teeth at the sink.",
        ["brushes the tail of the dog.", "drops the brush in the soup.", "mails the toothpaste away."],
    ),
    (
        "Baking cookies",
        "A girl mixes flour, sugar and eggs in a bowl.",
        "she",
        "bakes the dough on a tray.",
        ["pours the bowl into a bath.", "wears the bowl as a hat.", "feeds the dough to the car."],
    ),
    (
        "Playing soccer",
        "Two teams run onto a grassy field.",
        "the players",
        "kick the ball toward the goal.",
        ["sit down and knit sweaters.", "dig a big swimming pool there.", "fall asleep in a long row."],
    ),
    (
        "Painting a wall",
        "A man opens a can of paint.",
        "he",
        "rolls the paint onto the wall.",
        ["drinks the paint from the can.", "buries the can in the yard.", "sings to the paint for hours."],
    ),
    (
        "Walking a dog",
        "A woman clips a leash to her dog's collar.",
        "she",
        "walks the dog down the street.",
        ["puts the dog in the washer.", "sends the dog off to school.", "ties the leash to a cloud."],
    ),
    (
        "Riding a bike",
        "A kid puts on a helmet next to a bicycle.",
        "he",
        "climbs on and starts pedaling.",
        ["takes the bike apart and eats it.", "paints the helmet on the road.", "swims across the driveway."],
    ),
    (
        "Cooking pasta",
        "A pot of water comes to a boil.",
        "the cook",
        "adds the pasta and stirs it.",
        ["adds a pair of old shoes.", "pours the pot onto the floor.", "puts the pot in the closet."],
    ),
    (
        "Ironing clothes",
        "A woman sets a wrinkled shirt on an ironing board.",
        "she",
        "presses the hot iron on it.",
        ["puts the shirt in the oven.", "cuts the shirt into strips.", "hangs the iron on the wall."],
    ),
    (
        "Building a snowman",
        "Children roll a big ball of snow.",
        "they",
        "stack a smaller ball on top.",
        ["set all of the snow on fire.", "carry the snow into the oven.", "mail the snowball abroad."],
    ),
    (
        "Mowing the lawn",
        "A man pulls the cord of a lawn mower.",
        "he",
        "pushes the mower over the grass.",
        ["takes the mower swimming.", "reads a long book to the mower.", "puts the mower in the fridge."],
    ),
    (
        "Fishing",
        "A man casts a fishing line into a lake.",
        "he",
        "waits for a fish to bite.",
        ["jumps in and drinks the lake.", "ties the line to a bird.", "throws the rod at the sun."],
    ),
    (
        "Setting the table",
        "A girl places plates on the dining table.",
        "she",
        "puts a fork beside each plate.",
        ["puts a shoe on each plate.", "flips the whole table over.", "sweeps the plates onto the floor."],
    ),
    (
        "Doing laundry",
        "A woman carries a basket of dirty clothes.",
        "she",
        "loads them into the washer.",
        ["buries the clothes in the yard.", "feeds the clothes to a goat.", "puts the basket on the roof."],
    ),
    (
        "Planting a tree",
        "A man digs a hole in the yard.",
        "he",
        "sets a young tree in the hole.",
        ["fills the hole with old books.", "sleeps in the hole all week.", "hides the shovel in it forever."],
    ),
    (
        "Wrapping a gift",
        "A boy cuts a sheet of wrapping paper.",
        "he",
        "folds it around the box.",
        ["eats the paper very slowly.", "throws the box into a river.", "sets the paper on fire."],
    ),
    (
        "Making a sandwich",
        "A woman lays two slices of bread on a plate.",
        "she",
        "adds cheese between them.",
        ["spreads glue on the plate.", "puts the bread in her shoes.", "throws the bread at a bird."],
    ),
    (
        "Swimming laps",
        "A swimmer dives into the pool.",
        "she",
        "swims to the far end.",
        ["climbs a tree in the pool.", "bakes a cake under the water.", "drains the pool with a spoon."],
    ),
    (
        "Reading a book",
        "A man sits down in an armchair with a novel.",
        "he",
        "opens it and starts reading.",
        ["uses the book as a frying pan.", "throws the chair out the door.", "feeds the book to the fish."],
    ),
    (
        "Flying a kite",
        "A girl runs across a windy field holding a string.",
        "the kite",
        "rises high into the sky.",
        ["digs a hole in the ground.", "swims in the deep ocean.", "cooks a meal for everyone."],
    ),
    (
        "Changing a light bulb",
        "A man climbs a ladder under a dark lamp.",
        "he",
        "screws in a new bulb.",
        ["paints the ceiling black.", "takes a nap on the ladder.", "throws the lamp in the trash."],
    ),
    (
        "Shoveling snow",
        "Snow covers the driveway in the morning.",
        "a woman",
        "shovels the snow aside.",
        ["brings all the snow inside.", "paints the snow bright red.", "mails the snow to her aunt."],
    ),
    (
        "Packing a suitcase",
        "A man opens an empty suitcase on the bed.",
        "he",
        "folds his clothes inside it.",
        ["fills it with sand from the beach.", "sits inside it all day long.", "throws it in the fireplace."],
    ),
]


def _mc(rng: random.Random, right: str, wrong: list[str], n: int = 4) -> tuple[list[str], int]:
    options = [right, *wrong[: n - 1]]
    rng.shuffle(options)
    return options, options.index(right)


def arc(bank: list[tuple[str, str, list[str]]], prefix: str, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i, (q, right, wrong) in enumerate(bank):
        options, gold = _mc(rng, right, wrong)
        out.append(
            {
                "id": f"{prefix}-{i:03d}",
                "question": q,
                "choices": {"text": options, "label": list(LABELS[: len(options)])},
                "answerKey": LABELS[gold],
            }
        )
    return out


def openbookqa(bank: list[tuple[str, str, list[str]]], seed: int) -> list[dict[str, Any]]:
    return [
        {"id": r["id"], "question_stem": r["question"], "choices": r["choices"], "answerKey": r["answerKey"]}
        for r in arc(bank, "obqa", seed)
    ]


def hellaswag(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i, (label, ctx_a, ctx_b, right, wrong) in enumerate(STORIES):
        endings, gold = _mc(rng, right, wrong)
        out.append(
            {
                "ind": i,
                "activity_label": label,
                "ctx_a": ctx_a,
                "ctx_b": ctx_b,
                "ctx": f"{ctx_a} {ctx_b}",
                "endings": endings,
                "label": str(gold),
            }
        )
    return out


def piqa(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for goal, right, wrong in PHYSICAL:
        flip = rng.random() < 0.5
        out.append(
            {
                "goal": goal,
                "sol1": wrong if flip else right,
                "sol2": right if flip else wrong,
                "label": 1 if flip else 0,
            }
        )
    return out


def siqa(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for context, question, right, wrong in SOCIAL:
        options, gold = _mc(rng, right, wrong, 3)
        out.append(
            {
                "context": context,
                "question": question,
                "answerA": options[0],
                "answerB": options[1],
                "answerC": options[2],
                "label": str(gold + 1),
            }
        )
    return out


def winogrande() -> list[dict[str, Any]]:
    return [{"sentence": s, "option1": a, "option2": b, "answer": ans} for s, a, b, ans in WINO]


def datasets() -> dict[str, list[dict[str, Any]]]:
    return {
        "arc_easy": arc(EASY[:24], "arce", 1),
        "arc_challenge": arc(SCIENCE, "arcc", 2),
        "hellaswag": hellaswag(3),
        "openbookqa": openbookqa(SCIENCE[::-1], 4),
        "piqa": piqa(5),
        "winogrande": winogrande(),
        "siqa": siqa(6),
        "easy_qa": arc(EASY, "easy", 7),
    }


def main() -> None:
    for name, rows in datasets().items():
        text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        (DATA / f"{name}.jsonl").write_text(text)
        print(f"{name}: {len(rows)} examples")


if __name__ == "__main__":
    main()
